//! A collection: the skills `add --all` (or several `--skill`) takes from
//! one folder, repository or index. Each of them may be refused on its
//! own (an invalid SKILL.md, a `high` audit verdict) while the others are
//! installed; what was refused is reported by name with the reason and
//! what to do, and makes the command's status a failure.

use std::cell::RefCell;

use skillpkg_index::skill::SkillName;

use crate::error::UserError;

/// A skill left out of an install, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// The skill's name, or its folder's when its SKILL.md names none that
    /// can be read.
    pub skill: String,
    pub reason: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl std::fmt::Display for Refusal {
    /// The lines that report it: `error: left out NAME: REASON`, then what
    /// to do.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = format!("error: left out {}: {}", self.skill, self.reason);
        formatter.write_str(&crate::render::printable(&text))?;
        if let Some(fix) = &self.fix {
            write!(formatter, "\n  fix: {}", crate::render::printable(fix))?;
        }
        Ok(())
    }
}

impl Refusal {
    /// The refusal an error reading the skill `skill` amounts to: a
    /// problem with the skill itself (the user's error, with its hint);
    /// `None` for anything else (the network, the machine), which stops
    /// the whole command as before.
    pub fn of(skill: &str, error: &anyhow::Error) -> Option<Self> {
        let user = error.downcast_ref::<UserError>()?;
        // The others of the collection are installed: a hint's "nothing
        // was installed" is not true of the command.
        let fix = user.hint.as_deref().and_then(|hint| {
            let parts: Vec<&str> = hint
                .split("; ")
                .filter(|part| {
                    !matches!(
                        *part,
                        "nothing was installed" | "nothing was changed" | "nothing was added"
                    )
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        });
        Some(Self {
            skill: skill.to_owned(),
            reason: user.message.clone(),
            fix,
        })
    }
}

/// The skills an install refused because their audit found `high` risks:
/// the source of the install's error, so that a collection can leave
/// them out and install the rest.
#[derive(Debug)]
pub struct AuditRefused {
    pub refused: Vec<Refusal>,
}

impl std::fmt::Display for AuditRefused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reasons: Vec<&str> = self
            .refused
            .iter()
            .map(|refusal| refusal.reason.as_str())
            .collect();
        formatter.write_str(&reasons.join("; "))
    }
}

impl std::error::Error for AuditRefused {}

/// The skills being added as a collection, and those of them refused so
/// far.
#[derive(Debug, Default)]
pub struct Collection {
    /// The skills that may be refused one by one.
    optional: Vec<SkillName>,
    /// Refused before the install, while the skills were chosen.
    chosen_without: Vec<Refusal>,
    /// Refused by an install, and left out of the next.
    left_out: RefCell<Vec<Refusal>>,
    /// Skills are being added besides the optional ones.
    with_others: bool,
}

impl Collection {
    /// The collection of the skills `optional`, less those `chosen_without`
    /// already refused.
    /// `with_others`: other skills are being added too, so that leaving out
    /// every optional one still adds something.
    pub fn new(optional: Vec<SkillName>, chosen_without: Vec<Refusal>, with_others: bool) -> Self {
        Self {
            optional,
            chosen_without,
            left_out: RefCell::new(Vec::new()),
            with_others,
        }
    }

    /// Returns true if and only if an install refused the skill `name`, so
    /// that it is to be left out.
    pub fn is_left_out(&self, name: &SkillName) -> bool {
        self.left_out
            .borrow()
            .iter()
            .any(|refusal| refusal.skill == name.as_str())
    }

    /// Leaves out the skills an install's `error` refused, when each of
    /// them is one the collection may do without: returns true when the
    /// install should be tried again without them (and something is left
    /// to add). An install that failed changed nothing, so trying again is
    /// safe.
    pub fn leave_out(&self, error: &anyhow::Error) -> bool {
        let Some(audit) = error
            .chain()
            .find_map(|cause| cause.downcast_ref::<AuditRefused>())
        else {
            return false;
        };
        let optional = |refusal: &Refusal| {
            self.optional
                .iter()
                .any(|name| name.as_str() == refusal.skill)
        };
        if audit.refused.is_empty() || !audit.refused.iter().all(optional) {
            return false;
        }
        let remaining = self
            .optional
            .iter()
            .filter(|name| !self.is_left_out(name))
            .filter(|name| {
                !audit
                    .refused
                    .iter()
                    .any(|refusal| refusal.skill == name.as_str())
            })
            .count();
        if remaining == 0 && !self.with_others {
            return false;
        }
        self.left_out
            .borrow_mut()
            .extend(audit.refused.iter().cloned());
        true
    }

    /// The skills refused, in the order they were.
    pub fn refused(&self) -> Vec<Refusal> {
        let mut refused = self.chosen_without.clone();
        refused.extend(self.left_out.borrow().iter().cloned());
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> SkillName {
        text.parse().unwrap()
    }

    fn audit_error(skills: &[&str]) -> anyhow::Error {
        let refused = skills
            .iter()
            .map(|skill| Refusal {
                skill: (*skill).to_owned(),
                reason: format!("{skill} has high-risk findings"),
                fix: None,
            })
            .collect();
        UserError::new("refusing to install")
            .with_source(AuditRefused { refused })
            .into()
    }

    #[test]
    fn only_skills_of_the_collection_are_left_out() {
        let earlier = Refusal {
            skill: "a".to_owned(),
            reason: "a second `a`".to_owned(),
            fix: None,
        };
        let collection = Collection::new(vec![name("a"), name("b")], vec![earlier.clone()], false);
        assert!(!collection.leave_out(&audit_error(&["a", "c"])));
        assert_eq!(collection.refused(), std::slice::from_ref(&earlier));
        assert!(!collection.leave_out(&anyhow::anyhow!("the network")));
        assert!(collection.leave_out(&audit_error(&["b"])));
        assert!(collection.is_left_out(&name("b")));
        assert!(!collection.is_left_out(&name("a")));
        // A refusal made while choosing does not leave out the skill that
        // was chosen under the same name.
        assert!(!collection.is_left_out(&name("a")));
        assert_eq!(collection.refused()[1].reason, "b has high-risk findings");
        // Nothing would be left to add: the error stands.
        assert!(!collection.leave_out(&audit_error(&["a"])));
        assert!(!collection.is_left_out(&name("a")));
    }

    #[test]
    fn a_user_error_is_a_refusal_and_others_are_not() {
        let error: anyhow::Error = UserError::new("not a valid skill")
            .with_hint("fix it")
            .into();
        let refusal = Refusal::of("x", &error).unwrap();
        assert_eq!(refusal.fix.as_deref(), Some("fix it"));
        let error: anyhow::Error = UserError::new("not a valid skill")
            .with_hint("nothing was installed; run `skillpkg validate`")
            .into();
        let refusal = Refusal::of("x", &error).unwrap();
        assert_eq!(refusal.fix.as_deref(), Some("run `skillpkg validate`"));
        // Wherever the hint says it, that is not true of a collection.
        let said = |hint: &str| {
            let error: anyhow::Error = UserError::new("bad").with_hint(hint.to_owned()).into();
            Refusal::of("x", &error).unwrap().fix
        };
        assert_eq!(
            said("check the URL; nothing was installed; tell its operator").as_deref(),
            Some("check the URL; tell its operator")
        );
        assert_eq!(
            said("give the folder of the skill; nothing was installed").as_deref(),
            Some("give the folder of the skill")
        );
        assert_eq!(said("nothing was changed"), None);
        assert!(Refusal::of("x", &anyhow::anyhow!("I/O")).is_none());
    }
}
