//! Asking the user before a tool runs (spec 003 §8, "Per-tool
//! confirmation"), through MCP elicitation, and the `approval_state` of
//! spec 003's telemetry contract.
//!
//! When to ask ([`confirmation_for`]), the stricter rule winning:
//!
//! ```text
//! tools[].confirmation                 safety.require_confirmation_for   asks
//! absent                               without `always`                  no
//! level: never                         without `always`                  no
//! level: always | destructive_writes   anything                          yes
//!   | external_network, or no level
//! anything                             with `always`                     yes
//! ```
//!
//! A declared level says what the tool does; the runtime denies by default,
//! so a tool that says it writes destructively or reaches the network is
//! confirmed even when the skill's `safety` list leaves its level out.
//! `always` in that list confirms every tool of the skill, even one that
//! says `never`.
//!
//! The question is a form with one required boolean, `approve`, default
//! false: the call runs only when the client answers `accept` with
//! `approve: true`. Any other answer is `DENIED` with `APPROVAL_DENIED`,
//! and so is a client that cannot ask (it did not declare form
//! elicitation): a confirmation nobody can give is not given.
//!
//! `approval_state` is `NOT_REQUIRED` when no confirmation is needed,
//! `APPROVED` or `DENIED` once answered, and `PENDING` only in the audit
//! line of a call that ended (cancelled, say) while the question was open.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillpkg_index::skill::model::{ConfirmationLevel, JsonObject, Safety, Tool};

use super::cap_chars;
use super::error::{ErrorCode, ToolError};
use super::redact::Redactor;

/// The form field the user ticks to approve a run.
pub const APPROVE_FIELD: &str = "approve";

/// The longest skill prompt and argument text shown, in characters.
const MAX_SHOWN_CHARS: usize = 500;

/// `approval_state` in spec 003's telemetry contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ApprovalState {
    NotRequired,
    Pending,
    Approved,
    Denied,
}

/// A tool's need for the user's confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmationRequest {
    pub skill: String,
    pub tool: String,
    /// Why it is asked: never [`ConfirmationLevel::Never`].
    pub level: ConfirmationLevel,
    /// The skill's own words, `tools[].confirmation.prompt`.
    pub prompt: Option<String>,
}

/// Returns whether `tool` of `skill`, whose skill declares `safety`, asks
/// the user first, and why (the table in the module's documentation).
pub fn confirmation_for(
    skill: &str,
    tool: &Tool,
    safety: Option<&Safety>,
) -> Option<ConfirmationRequest> {
    let declared = tool.confirmation.as_ref();
    // A `confirmation` block without a level still asks: that is what
    // writing one means.
    let level = declared.map(|block| block.level.unwrap_or(ConfirmationLevel::Always));
    let always = safety.is_some_and(|safety| {
        safety
            .require_confirmation_for
            .contains(&ConfirmationLevel::Always)
    });
    let level = match level {
        Some(ConfirmationLevel::Never) | None if always => ConfirmationLevel::Always,
        Some(ConfirmationLevel::Never) | None => return None,
        Some(level) => level,
    };
    Some(ConfirmationRequest {
        skill: skill.to_owned(),
        tool: tool.name.as_str().to_owned(),
        level,
        prompt: declared.and_then(|block| block.prompt.clone()),
    })
}

impl ConfirmationRequest {
    /// Returns the question shown to the user: who asks, why, the skill's
    /// prompt and the arguments of this run, secrets redacted.
    pub fn message(&self, arguments: &JsonObject, redactor: &Redactor) -> String {
        let mut message = format!(
            "Allow the skill `{}` to run its tool `{}`?",
            self.skill, self.tool
        );
        let why = match self.level {
            ConfirmationLevel::DestructiveWrites => Some("It may change or delete files."),
            ConfirmationLevel::ExternalNetwork => Some("It may connect to the network."),
            ConfirmationLevel::Always | ConfirmationLevel::Never => None,
        };
        if let Some(why) = why {
            message.push(' ');
            message.push_str(why);
        }
        if let Some(prompt) = &self.prompt {
            let prompt = redactor.redact(prompt.trim());
            message.push_str(&format!(
                "\nThe skill says: {}",
                cap_chars(&prompt, MAX_SHOWN_CHARS)
            ));
        }
        let mut arguments = Value::Object(arguments.clone());
        redactor.redact_value(&mut arguments);
        message.push_str(&format!(
            "\nArguments: {}",
            cap_chars(&arguments.to_string(), MAX_SHOWN_CHARS)
        ));
        message
    }

    /// Returns the `elicitation/create` parameters that ask the user: the
    /// [`Self::message`] and a form with the one boolean [`APPROVE_FIELD`].
    pub fn elicitation_request(
        &self,
        arguments: &JsonObject,
        redactor: &Redactor,
    ) -> ElicitRequestParams {
        let schema = ElicitationSchema::builder()
            .required_bool_with(APPROVE_FIELD, |field| {
                field
                    .title("Approve")
                    .description("Run the tool once, with these arguments.")
                    .with_default(false)
            })
            .build()
            .expect("the one property is the required one");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: self.message(arguments, redactor),
            requested_schema: schema,
        }
    }
}

/// The client's answer to a confirmation request.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationAnswer {
    /// The client answered.
    Answered(ElicitResult),
    /// The client did not declare form elicitation, so it cannot ask.
    NotSupported,
    /// The request failed (connection lost, no answer in time).
    Failed(String),
}

/// The decision on a confirmation request.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    /// [`ApprovalState::Approved`] or [`ApprovalState::Denied`].
    pub state: ApprovalState,
    /// The `APPROVAL_DENIED` error to return, when denied.
    pub denial: Option<ToolError>,
}

impl Approval {
    /// Returns true if and only if the tool may run.
    pub fn is_approved(&self) -> bool {
        self.state == ApprovalState::Approved
    }
}

/// Decides from the client's answer whether the tool of `request` runs.
pub fn decide(request: &ConfirmationRequest, answer: &ElicitationAnswer) -> Approval {
    let subject = format!(
        "the tool `{}` of the skill `{}`",
        request.tool, request.skill
    );
    let (reason, retriable) = match answer {
        ElicitationAnswer::Answered(result) => match result.action {
            ElicitationAction::Accept => {
                let approved = result
                    .content
                    .as_ref()
                    .and_then(|content| content.get(APPROVE_FIELD))
                    == Some(&Value::Bool(true));
                if approved {
                    return Approval {
                        state: ApprovalState::Approved,
                        denial: None,
                    };
                }
                (
                    format!(
                        "the user did not approve running {subject} (`{APPROVE_FIELD}` was not ticked)"
                    ),
                    false,
                )
            }
            ElicitationAction::Decline => (format!("the user declined to run {subject}"), false),
            ElicitationAction::Cancel => (
                format!("the user dismissed the confirmation for {subject}, so it did not run"),
                false,
            ),
            // An action a later protocol adds is not an approval.
            _ => (
                format!(
                    "the client gave an answer this runtime does not know to the confirmation for {subject}"
                ),
                false,
            ),
        },
        ElicitationAnswer::NotSupported => (
            format!(
                "{subject} needs the user's confirmation, and this client cannot ask for it (it did not declare MCP form elicitation); use a client that supports elicitation"
            ),
            false,
        ),
        ElicitationAnswer::Failed(why) => (
            format!("asking the user to confirm {subject} failed: {why}"),
            true,
        ),
    };
    Approval {
        state: ApprovalState::Denied,
        denial: Some(ToolError::new(ErrorCode::ApprovalDenied, reason).with_retriable(retriable)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(confirmation: Option<Value>) -> Tool {
        let mut tool = json!({
            "name": "delete-output",
            "description": "Delete generated output files.",
            "input_schema": {
                "type": "object",
                "additionalProperties": false,
                "properties": { "dry_run": { "type": "boolean" } },
                "required": ["dry_run"]
            },
            "implementation": { "runtime": "bash", "entrypoint": "scripts/delete_output.sh" }
        });
        if let Some(confirmation) = confirmation {
            tool["confirmation"] = confirmation;
        }
        serde_json::from_value(tool).unwrap()
    }

    fn safety(levels: &[&str]) -> Safety {
        serde_json::from_value(json!({ "require_confirmation_for": levels })).unwrap()
    }

    fn level_for(
        confirmation: Option<Value>,
        policy: Option<&[&str]>,
    ) -> Option<ConfirmationLevel> {
        let safety = policy.map(safety);
        confirmation_for("cleanup", &tool(confirmation), safety.as_ref()).map(|c| c.level)
    }

    #[test]
    fn when_to_ask_follows_the_table() {
        use ConfirmationLevel::*;
        let level = |name: &str| Some(json!({ "level": name }));
        // Nothing declared, or `never`: not asked, unless the skill says always.
        assert_eq!(level_for(None, None), None);
        assert_eq!(level_for(None, Some(&["destructive_writes"])), None);
        assert_eq!(
            level_for(level("never"), Some(&["destructive_writes"])),
            None
        );
        assert_eq!(level_for(None, Some(&["always"])), Some(Always));
        assert_eq!(level_for(level("never"), Some(&["always"])), Some(Always));
        // A level that says what the tool does is asked, listed or not.
        assert_eq!(
            level_for(level("destructive_writes"), None),
            Some(DestructiveWrites)
        );
        assert_eq!(
            level_for(level("destructive_writes"), Some(&["destructive_writes"])),
            Some(DestructiveWrites)
        );
        assert_eq!(
            level_for(level("external_network"), Some(&["destructive_writes"])),
            Some(ExternalNetwork)
        );
        assert_eq!(level_for(level("always"), None), Some(Always));
        // A block with only a prompt asks.
        assert_eq!(
            level_for(Some(json!({ "prompt": "Sure?" })), None),
            Some(Always)
        );
    }

    #[test]
    fn spec_003s_delete_output_example_is_confirmed_with_its_prompt() {
        let confirmation = confirmation_for(
            "cleanup",
            &tool(Some(json!({
                "level": "destructive_writes",
                "prompt": "This will delete files under output/**."
            }))),
            None,
        )
        .unwrap();
        let mut arguments = JsonObject::new();
        arguments.insert("dry_run".into(), json!(false));
        let message = confirmation.message(&arguments, &Redactor::default());
        assert_eq!(
            message,
            "Allow the skill `cleanup` to run its tool `delete-output`? It may change or delete files.\n\
             The skill says: This will delete files under output/**.\n\
             Arguments: {\"dry_run\":false}"
        );
    }

    #[test]
    fn the_question_never_shows_a_secret_and_stays_short() {
        let confirmation = confirmation_for(
            "cleanup",
            &tool(Some(
                json!({ "level": "always", "prompt": "Uses sk-abcdef123." }),
            )),
            None,
        )
        .unwrap();
        let redactor = Redactor::new([("API_KEY", "sk-abcdef123")]);
        let mut arguments = JsonObject::new();
        arguments.insert("token".into(), json!("sk-abcdef123"));
        arguments.insert("blob".into(), json!("x".repeat(10_000)));
        let message = confirmation.message(&arguments, &redactor);
        assert!(!message.contains("sk-abcdef123"), "{message}");
        assert!(message.contains("[REDACTED:API_KEY]"), "{message}");
        assert!(message.len() < 1_200, "{}", message.len());
    }

    #[test]
    fn the_elicitation_request_is_a_form_with_one_required_boolean() {
        let confirmation =
            confirmation_for("cleanup", &tool(Some(json!({ "level": "always" }))), None).unwrap();
        let params = confirmation.elicitation_request(&JsonObject::new(), &Redactor::default());
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["mode"], "form");
        assert!(
            wire["message"]
                .as_str()
                .unwrap()
                .starts_with("Allow the skill `cleanup` to run its tool `delete-output`?")
        );
        assert_eq!(
            wire["requestedSchema"],
            json!({
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Approve",
                        "description": "Run the tool once, with these arguments.",
                        "default": false
                    }
                },
                "required": ["approve"]
            })
        );
    }

    fn decided(answer: &ElicitationAnswer) -> (ApprovalState, Option<(String, bool)>) {
        let confirmation =
            confirmation_for("cleanup", &tool(Some(json!({ "level": "always" }))), None).unwrap();
        let approval = decide(&confirmation, answer);
        assert_eq!(
            approval.is_approved(),
            approval.state == ApprovalState::Approved
        );
        let denial = approval.denial.map(|error| {
            assert_eq!(error.code, "APPROVAL_DENIED");
            assert!(
                error.message.contains("`delete-output`"),
                "{}",
                error.message
            );
            (error.message, error.retriable)
        });
        (approval.state, denial)
    }

    fn answered(action: ElicitationAction, content: Option<Value>) -> ElicitationAnswer {
        let result = ElicitResult::new(action);
        ElicitationAnswer::Answered(match content {
            Some(content) => result.with_content(content),
            None => result,
        })
    }

    #[test]
    fn only_an_accepted_ticked_approve_runs_the_tool() {
        assert_eq!(
            decided(&answered(
                ElicitationAction::Accept,
                Some(json!({ "approve": true }))
            )),
            (ApprovalState::Approved, None)
        );
        for content in [
            Some(json!({ "approve": false })),
            Some(json!({ "approve": "true" })),
            Some(json!({})),
            None,
        ] {
            let (state, denial) = decided(&answered(ElicitationAction::Accept, content.clone()));
            assert_eq!(state, ApprovalState::Denied, "{content:?}");
            assert!(denial.unwrap().0.contains("did not approve"));
        }
        let (state, denial) = decided(&answered(ElicitationAction::Decline, None));
        assert_eq!(state, ApprovalState::Denied);
        assert!(denial.unwrap().0.contains("declined"));
        let (state, denial) = decided(&answered(ElicitationAction::Cancel, None));
        assert_eq!(state, ApprovalState::Denied);
        assert_eq!(
            denial.map(|(message, retriable)| (message.contains("dismissed"), retriable)),
            Some((true, false))
        );
    }

    #[test]
    fn a_client_that_cannot_ask_is_a_denial_and_a_failed_request_may_be_retried() {
        let (state, denial) = decided(&ElicitationAnswer::NotSupported);
        assert_eq!(state, ApprovalState::Denied);
        let (message, retriable) = denial.unwrap();
        assert!(
            message.contains("cannot ask") && message.contains("elicitation"),
            "{message}"
        );
        assert!(!retriable);

        let (state, denial) = decided(&ElicitationAnswer::Failed("no answer within 300 s".into()));
        assert_eq!(state, ApprovalState::Denied);
        let (message, retriable) = denial.unwrap();
        assert!(message.ends_with("no answer within 300 s"), "{message}");
        assert!(retriable);
    }

    #[test]
    fn approval_states_are_written_as_the_spec_spells_them() {
        let states = [
            ApprovalState::NotRequired,
            ApprovalState::Pending,
            ApprovalState::Approved,
            ApprovalState::Denied,
        ];
        let written: Vec<Value> = states
            .iter()
            .map(|s| serde_json::to_value(s).unwrap())
            .collect();
        assert_eq!(
            written,
            [
                json!("NOT_REQUIRED"),
                json!("PENDING"),
                json!("APPROVED"),
                json!("DENIED")
            ]
        );
    }
}
