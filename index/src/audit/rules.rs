//! The catalogue of audit rules: each rule's stable id, its default
//! severity, and what a report says about it.
//!
//! Ids are part of the interface: `--json` and SARIF output, `[audit]
//! allow` in skills.toml, the verdicts in index records and `skills.lock`
//! name them. A rule is never renamed and an id is never reused;
//! `docs/security.md` lists every rule and a test checks that the document
//! and [`Rule::ALL`] agree.

use std::fmt;

/// How serious a finding is, from least to most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; never a reason to refuse.
    Info,
    /// Worth a look.
    Low,
    /// A risky capability a legitimate skill may need; a reviewer must look.
    Medium,
    /// How known attacks work; refused at publish and install by default.
    High,
}

impl Severity {
    /// Every severity, least first.
    pub const ALL: [Severity; 4] = [Self::Info, Self::Low, Self::Medium, Self::High];

    /// Returns the lower-case name used in output and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Severity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|severity| severity.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a severity; use info, low, medium or high"))
    }
}

impl serde::Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Severity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

macro_rules! rules {
    ($($variant:ident => $id:literal, $severity:ident, $title:literal, $why:literal, $fix:literal;)*) => {
        /// A stable audit rule.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $(#[doc = concat!("`", $id, "`: ", $title)] $variant,)*
        }

        impl Rule {
            /// Every rule, in documentation order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// Returns the kebab-case id.
            pub fn id(self) -> &'static str {
                match self { $(Rule::$variant => $id,)* }
            }

            /// Returns the severity a finding of this rule has unless the
            /// rule says otherwise for a particular case.
            pub fn default_severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity,)* }
            }

            /// Returns what the rule finds, in a few words.
            pub fn title(self) -> &'static str {
                match self { $(Rule::$variant => $title,)* }
            }

            /// Returns why a finding matters.
            pub fn why(self) -> &'static str {
                match self { $(Rule::$variant => $why,)* }
            }

            /// Returns how to fix a finding.
            pub fn fix(self) -> &'static str {
                match self { $(Rule::$variant => $fix,)* }
            }
        }
    };
}

rules! {
    BidiControl => "bidi-control", High,
        "bidirectional control character",
        "bidi overrides, embeddings and isolates make text display in another order than an agent reads it, so a reviewer approves one instruction and the agent follows another",
        "remove the character; write right-to-left text without overrides (marks such as U+200F are reported as low)";
    InvisibleCharacter => "invisible-character", Medium,
        "invisible character",
        "zero-width and other invisible characters hide text from a reviewer and split words so that filters miss them; long runs can encode a hidden message",
        "remove the character; joiners inside emoji and scripts that need them are not reported";
    TagCharacter => "tag-character", High,
        "Unicode tag characters",
        "tag characters (U+E0000-E007F) spell ASCII that a model reads and no screen shows: the way to smuggle an instruction past a reviewer",
        "remove the characters";
    ConfusableText => "confusable-text", Medium,
        "look-alike letters from another script",
        "a word that mixes Latin letters with Cyrillic or Greek look-alikes reads as one thing and matches as another: the way to impersonate a known skill or dodge a filter",
        "write the word in one script";
    DynamicContext => "dynamic-context", Medium,
        "command run when the skill loads",
        "Claude Code runs a `!`command`` line of SKILL.md when the skill loads, before the user sees or approves anything",
        "move the command into a script the agent runs on request, or state it as text for the agent to run with the user's approval";
    DynamicContextRemote => "dynamic-context-remote", High,
        "network command run when the skill loads",
        "a `!`command`` line that fetches from the network or feeds a shell runs code of someone else's choosing each time the skill loads, unreviewed and unapproved",
        "remove the line; ship what it fetches inside the skill, where it is signed and reviewed";
    PrivateKey => "private-key", High,
        "private key",
        "a private key in a published skill is public from then on: anyone can sign, decrypt or log in as its owner",
        "remove it, revoke it, and have the skill read keys from the user's environment or key store";
    Credential => "credential", High,
        "access token or API key",
        "a live credential in a published skill gives everyone who downloads it the publisher's access",
        "remove it, revoke it at its issuer, and read it from an environment variable instead";
    SecretAssignment => "secret-assignment", Medium,
        "high-entropy value assigned to a secret name",
        "a random-looking value assigned to a name like `API_KEY` or `PASSWORD` is most often a real secret",
        "read the value from the environment; use an obvious placeholder such as `<your-api-key>` in examples";
    UnrestrictedShell => "unrestricted-shell", Medium,
        "shell without restriction in allowed-tools",
        "`allowed-tools` grants its tools without asking the user; a bare `Bash` lets the agent run any command with the user's permissions",
        "restrict the shell to the commands the skill needs, such as `Bash(git status:*)`";
    DangerousToolCombination => "dangerous-tool-combination", Medium,
        "dangerous allowed-tools combination",
        "the Agent Skill Protocol warns about `Bash` with `Write` or `Edit` (create and run scripts) and with `WebFetch` (download and run remote code), granted without asking",
        "grant only one side, or restrict the shell to named commands";
    OverbroadPermissions => "overbroad-permissions", Medium,
        "overbroad permissions",
        "`permissions` are the least privilege a skill asks for; `**/*` or `*` asks for everything and so bounds nothing",
        "list only the paths and hosts the skill needs, like `output/**` or `api.example.com`";
    NetworkForbiddenByHost => "network-forbidden-by-host", Medium,
        "network access the host profile forbids",
        "the host profile runs skills without network access; a skill that declares outbound hosts will fail there or expects a sandbox it will not get",
        "make the skill work offline with `outbound: []`, or do not target that host";
    DownloadExec => "download-exec", High,
        "download and execute",
        "fetching a program and running it in one step runs whatever the server sends that day, unsigned and unreviewed: the install step of most credential stealers",
        "ship the program inside the skill, or install it with a package manager that pins and verifies it";
    DecodeExec => "decode-exec", High,
        "decode and execute",
        "running decoded data as code hides the code from every reviewer; legitimate skills have no reason to",
        "ship the code as readable source";
    ReverseShell => "reverse-shell", High,
        "reverse shell",
        "a shell connected to a remote host gives its owner the user's machine",
        "remove it";
    CredentialAccess => "credential-access", High,
        "reads a credential store",
        "SSH keys, cloud credentials, browser profiles, keychains and wallets are what stealers collect; a skill almost never needs to open them itself",
        "let the tool that owns the credential use it (`git`, `aws`, `gh`), or ask the user for a scoped token";
    Persistence => "persistence", High,
        "installs itself to run later",
        "writing shell start-up files, crontabs, launch agents, systemd units or `authorized_keys` makes code run long after the skill was used, or lets someone log in",
        "do not change the user's start-up files; tell the user what to add if they want it";
    Exfiltration => "exfiltration", High,
        "sends data to a drop site",
        "paste sites, webhooks and request catchers are where stolen data is sent: they need no account and leave no trace to the sender",
        "send data only to the service the skill is about, and say so in SKILL.md";
    InstructionOverride => "instruction-override", High,
        "overrides the agent's instructions",
        "text telling the agent to ignore its instructions or system prompt is prompt injection: it turns the agent against its user",
        "remove it; to document prompt injection, describe it without addressing the agent, and fence it as an example";
    ConcealFromUser => "conceal-from-user", High,
        "hides actions from the user",
        "an instruction to keep something from the user has no place in a skill that acts for that user",
        "remove it; a skill's actions must be visible to the user";
    DisableConfirmation => "disable-confirmation", Medium,
        "disables confirmations",
        "skipping confirmations and permission prompts removes the user's last chance to stop a harmful action",
        "leave confirmations to the user's settings";
    PrerequisiteInstall => "prerequisite-install", High,
        "installer run as a prerequisite",
        "\"before using this skill, install ...\" followed by a download, a password-protected archive or a command to paste is how the largest skill-registry malware campaigns delivered their stealers",
        "depend on packages from a package manager, or ship what is needed inside the skill";
    Typosquat => "typosquat", Medium,
        "installs a package named like a popular one",
        "a package one letter from one of the most downloaded names of its registry (`requets`, `crossenv`) is how squatters get their code run: installing a package runs its author's code",
        "check the name against the package you meant, and pin it with a version";
    RemotePackage => "remote-package", Medium,
        "installs a package from an address, not a registry",
        "a package installed from a URL, a git repository or another index is whatever that address serves today, not a release its registry keeps and scans, and installing it runs its author's code: how a skill gets unreviewed code onto a machine under a familiar installer",
        "depend on a released package from the registry, pinned with a version, or ship the code inside the skill";
    NativeExecutable => "native-executable", High,
        "compiled executable",
        "an ELF, PE or Mach-O file (or WebAssembly module) runs code no reviewer can read",
        "ship source and build it, or depend on a published package";
    NestedArchive => "nested-archive", Medium,
        "archive inside the skill",
        "an archive inside a skill hides its content from review and from this audit",
        "ship the files unpacked";
    ObfuscatedScript => "obfuscated-script", High,
        "obfuscated script",
        "a script that is mostly an encoded blob hides what it does; together with a decoder and `eval` it is the shape of a dropper",
        "ship readable source";
    MinifiedScript => "minified-script", Low,
        "minified script",
        "lines thousands of characters long cannot be reviewed",
        "ship the unminified source";
    Symlink => "symlink", Low,
        "symbolic link",
        "a link can point outside the skill; the audit does not follow it and packing refuses it",
        "replace the link with the file";
    UnscannedFile => "unscanned-file", Medium,
        "file the audit could not read",
        "a program, SKILL.md or document the audit could not read whole (past its size limit, not text, or in an encoding that its interpreter decodes and the audit does not) may hold anything; calling it clean would vouch for text no one read",
        "save it as UTF-8 text, keep it under 8 MiB, and ship binary payloads as separate, reviewable files";
    DisguisedText => "disguised-text", Medium,
        "text that review tools show as binary",
        "NUL bytes, UTF-16 or UTF-32 make git, GitHub and grep show a script as binary, with no diff, while sh skips the NULs and PowerShell decodes the rest: the way to slip a program past a reviewer",
        "save the file as UTF-8 without NUL bytes";
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl std::str::FromStr for Rule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|rule| rule.id() == text)
            .ok_or_else(|| {
                let suggestion = Self::ALL
                    .iter()
                    .min_by_key(|rule| strsim::levenshtein(rule.id(), text))
                    .filter(|rule| strsim::levenshtein(rule.id(), text) <= 3)
                    .map(|rule| format!(" (did you mean `{rule}`?)"))
                    .unwrap_or_default();
                format!(
                    "unknown audit rule `{text}`{suggestion}; the rules are listed in docs/security.md"
                )
            })
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/security.md lists every rule, with its default severity, and
    /// no rule that does not exist.
    #[test]
    fn the_documented_rules_are_the_rules() {
        let doc =
            fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/security.md"))
                .expect("docs/security.md");
        let section = &doc[doc.find("### Rules").expect("a Rules section")..];
        let section = &section[..section.find("### Suppressing").expect("the section ends")];
        let documented: Vec<(String, String)> = section
            .lines()
            .filter_map(|line| {
                let mut cells = line.strip_prefix("| `")?.split(" | ");
                let id = cells.next()?.trim_end_matches('`').to_owned();
                Some((id, cells.next()?.to_owned()))
            })
            .collect();
        let actual: Vec<(String, String)> = Rule::ALL
            .iter()
            .map(|rule| (rule.id().to_owned(), rule.default_severity().to_string()))
            .collect();
        assert_eq!(documented, actual);
        for rule in Rule::ALL {
            assert_eq!(rule.id().parse::<Rule>(), Ok(*rule));
        }
    }
}
