//! What the server asks a client the 2026-07-28 way (SEP-2322,
//! docs/runtime.md, "Confirmation and roots at 2026-07-28"): that revision
//! removed server-to-client requests, so instead of sending
//! `elicitation/create` or `roots/list` and waiting, the server answers the
//! `tools/call` with an `InputRequiredResult` that holds the questions (a
//! confirmation, the client's roots, or both) and a `requestState`; the
//! client answers them and calls again with the answers and the state
//! echoed back.
//!
//! The client holds the state between the rounds, so it is untrusted: it is
//! sealed with a key only this server process has (rmcp's
//! `RequestStateCodec`, HMAC-SHA-256), bound to the call it was made for
//! (the tool, a digest of its arguments, the session) so that an approval
//! of one call approves no other, valid for the call's `--timeout`, and
//! used once: an approved state replayed runs nothing.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

#[allow(deprecated)] // Roots are deprecated by SEP-2577; clients still send them.
use rmcp::model::ListRootsRequest;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::peer::RootsList;
use super::tool_call::{ElicitationAnswer, ErrorCode, ToolError};

/// The key of the confirmation among a round's input requests.
pub const CONFIRM: &str = "confirm";

/// The key of the client's roots among a round's input requests.
pub const ROOTS: &str = "roots";

/// What a sealed state holds: a nonce, so that each is used once.
#[derive(Serialize, Deserialize)]
struct State {
    nonce: String,
}

/// The server's seal for request states, and the states already used.
pub struct Rounds {
    codec: RequestStateCodec,
    used: Mutex<HashMap<String, Instant>>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rounds(..)")
    }
}

/// What a call needs from the client before it runs.
#[derive(Debug, Default)]
pub struct Asks {
    /// The user's confirmation, with this question.
    pub question: Option<ElicitRequestParams>,
    /// The client's roots.
    pub roots: bool,
}

/// What the client answered.
#[derive(Debug, Default)]
pub struct Answers {
    /// The answer to the confirmation, when one was asked.
    pub confirmation: Option<ElicitationAnswer>,
    /// The roots, when they were asked: `Err` says why there are none
    /// (not given, or not a list of roots).
    pub roots: Option<Result<RootsList, String>>,
}

/// What to do with a call that needs something of the client.
#[derive(Debug)]
pub enum Round {
    /// Ask: answer the call with this.
    Ask(InputRequiredResult),
    /// The client answered.
    Answered(Answers),
    /// The echoed state is not one this server made for this call, or it
    /// expired, or it was used: nothing runs.
    Refused(ToolError),
}

impl Rounds {
    /// A seal with a fresh random key. Fails only when the system's random
    /// source does.
    pub fn new() -> std::io::Result<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|error| std::io::Error::other(error.to_string()))?;
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        Ok(Self {
            codec,
            used: Mutex::new(HashMap::new()),
        })
    }

    /// The round of a call to `tool` with `arguments` in `session`, given
    /// what the client sent back (`responses`, `state`), asking what `asks`
    /// says when it sent nothing; states live for `ttl`.
    pub fn round(
        &self,
        call: &CallBinding<'_>,
        responses: Option<&InputResponses>,
        state: Option<&str>,
        asks: Asks,
        ttl: Duration,
    ) -> Round {
        let bound = call.associated_data();
        let options = SealOptions::new().associated_data(&bound).ttl(ttl);
        match (responses, state) {
            (None, None) => {}
            (Some(responses), Some(state)) => {
                return self.answered(responses, &asks, state, &bound, ttl);
            }
            _ => {
                return Round::Refused(ToolError::new(
                    ErrorCode::InvalidArgument,
                    "answers come back with both their `inputResponses` and the `requestState` they were asked with; call again without them to be asked",
                ));
            }
        }
        let mut requests = InputRequests::new();
        if let Some(question) = asks.question {
            requests.insert(
                CONFIRM.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(question)),
            );
        }
        if asks.roots {
            #[allow(deprecated)]
            requests.insert(
                ROOTS.to_owned(),
                InputRequest::ListRoots(ListRootsRequest::default()),
            );
        }
        let mut nonce = [0u8; 16];
        if let Err(error) = getrandom::fill(&mut nonce) {
            return Round::Refused(ToolError::new(
                ErrorCode::Internal,
                format!("no randomness for a request state: {error}"),
            ));
        }
        let state = State {
            nonce: skillpkg_index::archive::tree_hash::hex(&nonce),
        };
        match self.codec.seal_json_with(&state, &options) {
            Ok(sealed) => Round::Ask(InputRequiredResult::new(Some(requests), Some(sealed))),
            Err(error) => Round::Refused(ToolError::new(
                ErrorCode::Internal,
                format!("cannot seal the request state: {error}"),
            )),
        }
    }

    fn answered(
        &self,
        responses: &InputResponses,
        asks: &Asks,
        sealed: &str,
        bound: &[u8],
        ttl: Duration,
    ) -> Round {
        let state: State = match self.codec.open_json_with(sealed, bound) {
            Ok(state) => state,
            Err(error) => {
                return Round::Refused(ToolError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "the requestState was not made by this server for this call, or it expired ({error}); call again without it to be asked"
                    ),
                ));
            }
        };
        let now = Instant::now();
        {
            let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
            used.retain(|_, at| now.duration_since(*at) < ttl);
            if used.insert(state.nonce, now).is_some() {
                return Round::Refused(ToolError::new(
                    ErrorCode::InvalidArgument,
                    "this requestState was already answered once; call again without it to be asked",
                ));
            }
        }
        // Only what this round asks counts: an answer to anything else
        // is ignored, and one missing is no answer.
        Round::Answered(Answers {
            confirmation: asks.question.as_ref().map(|_| {
                match responses.get(CONFIRM).map(|answer| {
                    serde_json::from_value::<ElicitResult>(answer.clone())
                }) {
                    Some(Ok(result)) => ElicitationAnswer::Answered(result),
                    Some(Err(error)) => ElicitationAnswer::Failed(format!(
                        "the answer to the confirmation is not an elicitation result: {error}"
                    )),
                    None => ElicitationAnswer::Failed(
                        "the confirmation was asked, but the call came back without an answer to it"
                            .to_owned(),
                    ),
                }
            }),
            roots: asks.roots.then(|| match responses.get(ROOTS) {
                Some(answer) => {
                    serde_json::from_value::<RootsList>(answer.clone()).map_err(|error| {
                        format!("the answer to roots/list is not a list of roots: {error}")
                    })
                }
                None => Err("the roots were asked, but the call came back without them".to_owned()),
            }),
        })
    }
}

/// What a request state is bound to.
#[derive(Debug)]
pub struct CallBinding<'a> {
    /// The tool's name on the wire.
    pub tool: &'a str,
    /// Its arguments, as the client sent them (the session handle taken
    /// out).
    pub arguments: &'a JsonObject,
    /// The session: its handle, or the connection's number.
    pub session: &'a str,
}

impl CallBinding<'_> {
    fn associated_data(&self) -> Vec<u8> {
        let mut digest = Sha256::new();
        for part in [
            self.tool.as_bytes(),
            &serde_json::to_vec(self.arguments).unwrap_or_default(),
            self.session.as_bytes(),
        ] {
            digest.update((part.len() as u64).to_be_bytes());
            digest.update(part);
        }
        digest.finalize().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ElicitationAction, ElicitationSchema};
    use serde_json::json;

    use super::*;

    fn question() -> ElicitRequestParams {
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "Run it?".into(),
            requested_schema: ElicitationSchema::builder()
                .required_bool("approve")
                .build()
                .unwrap(),
        }
    }

    fn arguments(value: serde_json::Value) -> JsonObject {
        match value {
            serde_json::Value::Object(object) => object,
            other => panic!("arguments are an object, not {other}"),
        }
    }

    fn confirmation() -> Asks {
        Asks {
            question: Some(question()),
            roots: false,
        }
    }

    fn ask(rounds: &Rounds, call: &CallBinding<'_>) -> String {
        match rounds.round(call, None, None, confirmation(), Duration::from_secs(60)) {
            Round::Ask(result) => {
                assert!(result.input_requests.unwrap().contains_key(CONFIRM));
                result.request_state.unwrap()
            }
            other => panic!("asks first: {other:?}"),
        }
    }

    fn answer(rounds: &Rounds, call: &CallBinding<'_>, state: &str, ttl: Duration) -> Round {
        let responses = InputResponses::from([(
            CONFIRM.to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]);
        rounds.round(call, Some(&responses), Some(state), confirmation(), ttl)
    }

    #[test]
    fn an_approval_runs_the_call_it_was_asked_for_once_and_no_other() {
        let rounds = Rounds::new().unwrap();
        let args = arguments(json!({"path": "out/"}));
        let call = CallBinding {
            tool: "cleanup__delete",
            arguments: &args,
            session: "3",
        };
        let state = ask(&rounds, &call);
        let minute = Duration::from_secs(60);

        // Another call, other arguments, another session: refused.
        let other_args = arguments(json!({"path": "/"}));
        for other in [
            CallBinding {
                tool: "cleanup__other",
                arguments: &args,
                session: "3",
            },
            CallBinding {
                tool: "cleanup__delete",
                arguments: &other_args,
                session: "3",
            },
            CallBinding {
                tool: "cleanup__delete",
                arguments: &args,
                session: "4",
            },
        ] {
            assert!(matches!(
                answer(&rounds, &other, &state, minute),
                Round::Refused(_)
            ));
        }
        // A state changed by one character: refused.
        let mut tampered = state.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(matches!(
            answer(&rounds, &call, &tampered, minute),
            Round::Refused(_)
        ));

        match answer(&rounds, &call, &state, minute) {
            Round::Answered(Answers {
                confirmation: Some(ElicitationAnswer::Answered(result)),
                roots: None,
            }) => {
                assert_eq!(result.action, ElicitationAction::Accept);
            }
            other => panic!("the answer counts: {other:?}"),
        }
        // Replayed: refused.
        assert!(matches!(
            answer(&rounds, &call, &state, minute),
            Round::Refused(_)
        ));
        // Another server's state: refused.
        let elsewhere = Rounds::new().unwrap();
        let foreign = ask(&elsewhere, &call);
        assert!(matches!(
            answer(&rounds, &call, &foreign, minute),
            Round::Refused(_)
        ));
    }

    #[test]
    fn an_answer_without_its_state_or_after_its_time_is_refused() {
        let rounds = Rounds::new().unwrap();
        let args = arguments(json!({}));
        let call = CallBinding {
            tool: "t",
            arguments: &args,
            session: "1",
        };
        let responses = InputResponses::from([(CONFIRM.to_owned(), json!({"action": "accept"}))]);
        assert!(matches!(
            rounds.round(
                &call,
                Some(&responses),
                None,
                confirmation(),
                Duration::from_secs(60)
            ),
            Round::Refused(_)
        ));
        let short = Duration::from_millis(50);
        let state = match rounds.round(&call, None, None, confirmation(), short) {
            Round::Ask(result) => result.request_state.unwrap(),
            other => panic!("{other:?}"),
        };
        std::thread::sleep(Duration::from_millis(2100));
        assert!(matches!(
            answer(&rounds, &call, &state, short),
            Round::Refused(_)
        ));
    }

    #[test]
    #[allow(deprecated)] // Roots, deprecated by SEP-2577, are what is tested.
    fn roots_are_asked_with_the_confirmation_and_only_what_was_asked_counts() {
        let rounds = Rounds::new().unwrap();
        let args = arguments(json!({"path": "scripts/run.sh"}));
        let call = CallBinding {
            tool: "skills_run_script",
            arguments: &args,
            session: "sess_1",
        };
        let minute = Duration::from_secs(60);
        let both = || Asks {
            question: Some(question()),
            roots: true,
        };
        let state = match rounds.round(&call, None, None, both(), minute) {
            Round::Ask(result) => {
                let asked = result.input_requests.unwrap();
                assert_eq!(
                    asked.keys().map(String::as_str).collect::<Vec<_>>(),
                    [CONFIRM, ROOTS]
                );
                assert_eq!(
                    serde_json::to_value(&asked[ROOTS]).unwrap()["method"],
                    "roots/list"
                );
                result.request_state.unwrap()
            }
            other => panic!("asks first: {other:?}"),
        };
        let responses = InputResponses::from([
            (
                ROOTS.to_owned(),
                json!({"roots": [{"uri": "file:///work/app", "name": "app"}]}),
            ),
            ("other".to_owned(), json!({"ignored": true})),
        ]);
        match rounds.round(&call, Some(&responses), Some(&state), both(), minute) {
            Round::Answered(Answers {
                confirmation: Some(ElicitationAnswer::Failed(why)),
                roots: Some(Ok(listed)),
            }) => {
                assert!(why.contains("without an answer"), "{why}");
                assert_eq!(listed.roots[0].uri, "file:///work/app");
            }
            other => panic!("{other:?}"),
        }

        // Roots alone; an answer that is not a list of roots is said so.
        let roots_only = || Asks {
            question: None,
            roots: true,
        };
        let state = match rounds.round(&call, None, None, roots_only(), minute) {
            Round::Ask(result) => result.request_state.unwrap(),
            other => panic!("{other:?}"),
        };
        let responses = InputResponses::from([(ROOTS.to_owned(), json!({"roots": "/"}))]);
        match rounds.round(&call, Some(&responses), Some(&state), roots_only(), minute) {
            Round::Answered(Answers {
                confirmation: None,
                roots: Some(Err(why)),
            }) => assert!(why.contains("not a list of roots"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
