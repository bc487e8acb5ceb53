//! `skillpkg mcp` driven by a second, independent client: the official
//! Python MCP SDK (the `mcp` package `.ci/run` installs), through
//! `tests/mcp_client/session.py`. The driver only records; every
//! expectation is here, written from spec 001 and SEP-2640.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use skillpkg_tests::{Sandbox, binary, mcp_python};

struct Project {
    sandbox: Sandbox,
}

impl Project {
    /// pdf-processing (with a reference and a script) and data-analysis.
    fn new() -> Self {
        let sandbox = Sandbox::new();
        let project = Self { sandbox };
        project.write(
            ".claude/skills/pdf-processing/SKILL.md",
            "---\nname: pdf-processing\ndescription: Extract text and tables from PDF files.\nlicense: MIT\n---\n# PDF\n\nRead references/forms.md, then run scripts/extract.py.\n",
        );
        project.write(
            ".claude/skills/pdf-processing/references/forms.md",
            "# Forms\nFill fields.\n",
        );
        project.write(
            ".claude/skills/pdf-processing/scripts/extract.py",
            "import sys\nprint('pages', sys.argv[1:])\n",
        );
        project.write(
            ".claude/skills/data-analysis/SKILL.md",
            "---\nname: data-analysis\ndescription: Analyse tables of data.\n---\n# Data\n\nUse pandas.\n",
        );
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn write(&self, relative: &str, contents: &str) -> PathBuf {
        self.sandbox.write(&format!("project/{relative}"), contents)
    }

    /// Runs `flow` and returns its log.
    fn flow(&self, flow: &str) -> Vec<Value> {
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_client/session.py");
        let python = mcp_python();
        let output = std::process::Command::new(&python)
            .arg(driver)
            .arg(flow)
            .arg("--")
            .arg(binary("skillpkg"))
            .arg("mcp")
            .arg("--project")
            .arg(self.dir())
            .env("HOME", self.sandbox.path().join("home"))
            .env("SKILLPKG_CONFIG_DIR", self.sandbox.path().join("config"))
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
    }
}

fn entries<'a>(log: &'a [Value], request: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|entry| entry["request"] == request)
        .collect()
}

fn prompt_text(entry: &Value) -> &str {
    entry["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
}

#[test]
fn the_catalog_is_served_to_the_python_client() {
    let project = Project::new();
    let log = project.flow("catalog");

    let init = &entries(&log, "initialize")[0]["result"];
    assert_eq!(init["serverInfo"]["name"], "skillpkg");
    assert_eq!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);

    let tools: Vec<&str> = entries(&log, "tools/list")[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for name in ["skills_load", "skills_unload", "skills_read"] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    assert!(
        tools.iter().all(|name| !name.contains('.')),
        "no dots on the wire: {tools:?}"
    );

    let prompts: Vec<&str> = entries(&log, "prompts/list")[0]["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["available_skills", "active_skills"]);

    let available = prompt_text(entries(&log, "prompts/get")[0]);
    assert!(
        available.starts_with("Skills are folders of instructions"),
        "{available}"
    );
    let pdf = project.dir().join(".claude/skills/pdf-processing");
    assert!(
        available.contains(&format!(
            "  <skill>\n    <name>pdf-processing</name>\n    <description>Extract text and tables from PDF files.</description>\n    <location>{}</location>\n  </skill>\n",
            pdf.join("SKILL.md").display()
        )),
        "{available}"
    );

    // skills/list: each skill's frontmatter as written, and every file with
    // the digest of its bytes; resources/read serves bytes with that digest.
    let listed = &entries(&log, "skills/list")[0]["result"]["skills"];
    let pdf_entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|skill| skill["uri"] == "skill://pdf-processing/SKILL.md")
        .expect("pdf-processing is listed");
    assert_eq!(
        pdf_entry["frontmatter"],
        json!({"name": "pdf-processing", "description": "Extract text and tables from PDF files.", "license": "MIT"})
    );
    let resources = pdf_entry["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3, "{resources:?}");
    for resource in resources {
        let uri = resource["uri"].as_str().unwrap();
        let path = uri.strip_prefix("skill://pdf-processing/").unwrap();
        let bytes = fs_err::read(pdf.join(path)).unwrap();
        assert_eq!(
            resource["digest"],
            format!("sha256:{:x}", Sha256::digest(&bytes))
        );
        assert_eq!(resource["size"], bytes.len());
        let read = entries(&log, "resources/read")
            .into_iter()
            .find(|entry| entry["uri"] == uri)
            .expect("every file was read");
        assert_eq!(
            read["result"]["contents"][0]["text"]
                .as_str()
                .unwrap()
                .as_bytes(),
            bytes.as_slice()
        );
    }
    for got in entries(&log, "skills/get") {
        let listed_entry = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|skill| skill["uri"] == got["uri"])
            .unwrap();
        assert_eq!(&got["result"]["skill"], listed_entry);
    }
}

#[test]
fn skill_switching_replaces_the_instructions_in_force() {
    let project = Project::new();
    let log = project.flow("skill-switching");
    let calls = entries(&log, "tools/call");
    let prompts = entries(&log, "prompts/get");

    let first = &calls[0]["result"];
    assert_eq!(first["isError"], false);
    assert_eq!(
        first["structuredContent"]["active_skills"][0]["name"],
        "pdf-processing"
    );
    assert!(prompt_text(prompts[0]).contains("<skill name=\"pdf-processing\">"));

    // skills.load(names=["data-analysis"], mode="replace"): the state is
    // ["data-analysis"], and the next instructions carry only its body.
    let switched = &calls[1]["result"];
    let names: Vec<&str> = switched["structuredContent"]["active_skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["data-analysis"]);
    assert_eq!(
        prompt_text(prompts[1]),
        "<active_skills>\n  <skill name=\"data-analysis\">\n# Data\n\nUse pandas.\n  </skill>\n</active_skills>\n"
    );

    // The unloaded skill's files are no longer readable in this session.
    let stale = &calls[2]["result"];
    assert_eq!(stale["isError"], true);
    assert_eq!(
        stale["structuredContent"]["error"]["code"],
        "FAILED_PRECONDITION"
    );
}
