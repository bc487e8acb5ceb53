//! The registry's web pages (docs/web.md) in a real browser: Debian's
//! chromium, driven through chromedriver (WebDriver) with fantoccini,
//! loads the pages from `skillpkg-registry serve` and from nginx serving
//! a tree written by `skillpkg-registry build`, searches, opens a skill,
//! runs axe-core on every page in light and dark, checks a phone's width
//! needs no sideways scrolling, and saves screenshots under
//! `target/web-screenshots/`, checked not blank. Hostile Markdown and yank
//! reasons are shown as text and never run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use skillpkg_tests::TestContext;
use skillpkg_tests::registry::{Skill, TestRegistry};
use skillpkg_tests::{Nginx, free_port, run, wait_for_port};

/// The Markdown of the hostile skill: every way a page could be made to
/// run something, and a marker the test looks for.
const HOSTILE_BODY: &str = r##"# Totally harmless

<script>window.__pwned = "script";</script>

Click <img src="x" onerror="window.__pwned = 'img'"> here, or
[this](javascript:window.__pwned='link'), or <a href="#" onclick="window.__pwned='click'">that</a>.

<iframe src="data:text/html,<script>parent.__pwned='frame'</script>"></iframe>

<style>body { display: none }</style>

MARKER-VISIBLE-TEXT
"##;

/// chromedriver on a free port, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
    _profiles: tempfile::TempDir,
}

impl Driver {
    fn start() -> Self {
        let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .expect("chromedriver is not installed: `apt-get install chromium chromium-driver` (.ci/run does)");
        let port = free_port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start chromedriver");
        wait_for_port(port);
        Self {
            child,
            port,
            _profiles: tempfile::tempdir().unwrap(),
        }
    }

    /// A new headless browser session; `dark` asks pages for the dark
    /// colour scheme.
    async fn browser(&self, dark: bool) -> Client {
        let profile = tempfile::tempdir_in(self._profiles.path()).unwrap().keep();
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            "--window-size=1200,900".to_owned(),
            format!("--user-data-dir={}", profile.display()),
        ];
        args.push(format!(
            "--blink-settings=preferredColorScheme={}",
            if dark { 0 } else { 1 }
        ));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": "/usr/bin/chromium", "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a chromium session from chromedriver")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where screenshots go: `<target>/web-screenshots/`, kept as CI artifacts.
fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("web-screenshots");
    fs_err::create_dir_all(&dir).unwrap();
    dir
}

/// Saves a screenshot as `<name>.png` and checks it is not blank: a real
/// PNG, most of it background, but with text and colour on it.
async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    let path = screenshots().join(format!("{name}.png"));
    fs_err::write(&path, &png).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(&png));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = info.color_type.samples();
    let pixels = &pixels[..info.buffer_size()];
    let background = &pixels[..channels];
    let total = pixels.len() / channels;
    let differing = pixels
        .chunks(channels)
        .filter(|pixel| {
            pixel
                .iter()
                .zip(background)
                .any(|(a, b)| a.abs_diff(*b) > 24)
        })
        .count();
    let colours: std::collections::BTreeSet<&[u8]> = pixels.chunks(channels).collect();
    assert!(
        differing * 200 > total && colours.len() > 16,
        "{} looks blank: {differing} of {total} pixels differ from the background, {} colours",
        path.display(),
        colours.len()
    );
}

/// Runs axe-core (from npm, as `.ci/run` installs it) on the page and
/// returns its violations, as `rule: nodes` lines.
async fn axe(browser: &Client) -> Vec<String> {
    let source = fs_err::read_to_string(axe_core()).unwrap();
    browser.execute(&source, Vec::new()).await.unwrap();
    let result = browser
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
            axe.run(document, { resultTypes: ["violations"] })
              .then(result => done(JSON.stringify(result.violations)))
              .catch(error => done(JSON.stringify([{ id: "axe-error", help: String(error), nodes: [] }])));"#,
            Vec::new(),
        )
        .await
        .unwrap();
    let violations: Vec<Value> = serde_json::from_str(result.as_str().unwrap()).unwrap();
    violations
        .iter()
        .map(|violation| {
            let nodes: Vec<String> = violation["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|node| {
                    node["html"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(120)
                        .collect()
                })
                .collect();
            format!(
                "{}: {} [{}]",
                violation["id"],
                violation["help"],
                nodes.join(" | ")
            )
        })
        .collect()
}

fn axe_core() -> PathBuf {
    let path = std::env::var_os("SKILLPKG_TEST_AXE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../.ci/npm/node_modules/axe-core/axe.min.js")
        },
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "{} does not exist: run `.ci/run`, or `npm install --prefix .ci/npm axe-core@4`, or set SKILLPKG_TEST_AXE to axe.min.js",
        path.display()
    );
    path
}

/// Checks that axe finds what it should: an image without a text
/// alternative and a field without a label, on a page made bad on
/// purpose, so that a clean verdict on the registry's pages means
/// something.
async fn axe_finds_violations(browser: &Client) {
    browser
        .execute(
            "document.body.innerHTML = '<main><img src=\"x.png\"><input type=\"text\"></main>';",
            Vec::new(),
        )
        .await
        .unwrap();
    let violations = axe(browser).await;
    for rule in ["\"image-alt\"", "\"label\""] {
        assert!(
            violations
                .iter()
                .any(|violation| violation.starts_with(rule)),
            "axe did not find {rule}: {violations:#?}"
        );
    }
}

/// Evaluates `expression` in the page.
async fn eval(browser: &Client, expression: &str) -> Value {
    browser
        .execute(&format!("return {expression};"), Vec::new())
        .await
        .unwrap()
}

/// Checks the page passes axe, in the colour scheme the session asked for.
async fn accessible(browser: &Client, page: &str, dark: bool) {
    assert_eq!(
        eval(
            browser,
            "matchMedia('(prefers-color-scheme: dark)').matches"
        )
        .await,
        json!(dark),
        "the browser did not take the colour scheme asked for"
    );
    let violations = axe(browser).await;
    assert!(
        violations.is_empty(),
        "{page} ({}): {violations:#?}",
        if dark { "dark" } else { "light" }
    );
}

/// Types `query` in the search field and waits for the results to say how
/// many match.
async fn search(browser: &Client, query: &str) -> Vec<String> {
    let field = browser.find(Locator::Css("#q")).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(query).await.unwrap();
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::XPath(&format!(
            "//p[@id='status'][contains(., '{query}')]"
        )))
        .await
        .unwrap();
    let mut names = Vec::new();
    for link in browser
        .find_all(Locator::Css("#results li a"))
        .await
        .unwrap()
    {
        names.push(link.text().await.unwrap());
    }
    names
}

/// The pages of the registry at `base` (`http://HOST:PORT`), visited as a
/// user would, in light and dark, at a desktop's and a phone's width.
/// `label` names the screenshots; `commit` is the one pdf-tools 1.0.0's
/// provenance names.
async fn visit(driver: &Driver, base: &str, label: &str, commit: &str) {
    for dark in [false, true] {
        let scheme = if dark { "dark" } else { "light" };
        let browser = driver.browser(dark).await;
        browser.goto(&format!("{base}/")).await.unwrap();
        assert_eq!(browser.title().await.unwrap(), "Skills — skillpkg registry");
        // With no words: every skill, most downloaded first.
        browser
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::XPath(
                "//p[@id='status'][contains(., 'in this registry')]",
            ))
            .await
            .unwrap();
        let found = search(&browser, "pdf").await;
        assert_eq!(found, ["pdf-tools"], "search for pdf on {base}");
        let found = search(&browser, "harmless").await;
        assert_eq!(found, ["harmless"]);
        let found = search(&browser, "nothing-like-this").await;
        assert!(found.is_empty());
        let found = search(&browser, "csv").await;
        assert_eq!(found, ["csv-report"]);
        accessible(&browser, "the home page", dark).await;
        screenshot(&browser, &format!("{label}-home-{scheme}")).await;

        // A search has its own address.
        browser.goto(&format!("{base}/?q=pdf")).await.unwrap();
        browser
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("#results li a"))
            .await
            .unwrap();
        let link = browser.find(Locator::Css("#results li a")).await.unwrap();
        link.click().await.unwrap();
        browser
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("h1"))
            .await
            .unwrap();
        assert_eq!(
            browser.current_url().await.unwrap().path(),
            "/skills/pdf-tools.html"
        );
        let heading = browser.find(Locator::Css("h1")).await.unwrap();
        assert_eq!(heading.text().await.unwrap(), "pdf-tools");
        let text = browser
            .find(Locator::Css("main"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for expected in [
            "skillpkg add pdf-tools",
            "2.0.0",
            "yanked: <script>alert('reason')</script>",
            "scripts/extract.sh",
            "executable",
            "Extract the text",
            "Repository\nhttps://github.com/example/pdf-tools.git",
            "Built by",
            commit,
        ] {
            assert!(
                text.contains(expected),
                "{expected:?} is not on the page:\n{text}"
            );
        }
        accessible(&browser, "a skill's page", dark).await;
        screenshot(&browser, &format!("{label}-skill-{scheme}")).await;

        // A phone: nothing needs sideways scrolling.
        browser.set_window_size(390, 844).await.unwrap();
        for page in ["/", "/skills/pdf-tools.html", "/skills.html"] {
            browser.goto(&format!("{base}{page}")).await.unwrap();
            let overflow = eval(
                &browser,
                "document.documentElement.scrollWidth - document.documentElement.clientWidth",
            )
            .await;
            assert_eq!(overflow, json!(0), "{page} scrolls sideways on a phone");
        }
        screenshot(&browser, &format!("{label}-list-phone-{scheme}")).await;
        browser
            .goto(&format!("{base}/skills/pdf-tools.html"))
            .await
            .unwrap();
        screenshot(&browser, &format!("{label}-skill-phone-{scheme}")).await;
        browser.set_window_size(1200, 900).await.unwrap();

        // The hostile skill: its Markdown is shown, not run.
        browser
            .goto(&format!("{base}/skills/harmless.html"))
            .await
            .unwrap();
        let main = browser.find(Locator::Css("main")).await.unwrap();
        let text = main.text().await.unwrap();
        assert!(text.contains("MARKER-VISIBLE-TEXT"), "{text}");
        assert!(
            text.contains("<script>window.__pwned = \"script\";</script>"),
            "{text}"
        );
        assert_eq!(
            eval(&browser, "window.__pwned === undefined").await,
            json!(true)
        );
        assert_eq!(
            eval(
                &browser,
                "document.querySelectorAll('main script, main iframe, main img, main style, main [onclick], main [onerror], main a[href^=\"javascript\"]').length"
            )
            .await,
            json!(0)
        );
        // Clicking every link of the body runs nothing either.
        let links = browser.find_all(Locator::Css(".markdown a")).await.unwrap();
        for link in links {
            let _ = link.click().await;
        }
        assert_eq!(
            eval(&browser, "window.__pwned === undefined").await,
            json!(true)
        );
        accessible(&browser, "the hostile skill's page", dark).await;

        // Keyboard: the skip link is the first stop and leads to main.
        browser.goto(&format!("{base}/skills.html")).await.unwrap();
        let body = browser.find(Locator::Css("body")).await.unwrap();
        body.send_keys("\u{E004}").await.unwrap();
        assert_eq!(
            eval(&browser, "document.activeElement.textContent").await,
            json!("Skip to content")
        );
        accessible(&browser, "the list of skills", dark).await;
        axe_finds_violations(&browser).await;
        browser.close().await.unwrap();
    }
}

/// Publishes the skills the pages show: pdf-tools (two versions, the
/// newer yanked with a hostile reason; a script), csv-report, and the
/// hostile `harmless`.
fn publish_skills(registry: &TestRegistry, ctx: &TestContext) -> String {
    // pdf-tools 1.0.0 from a git repository, with its provenance.
    let repository = ctx.path().join("pdf-tools-repo");
    Skill::new("pdf-tools", "1.0.0")
        .description("Extracts text and tables from PDF files.")
        .body("# PDF tools\n\nExtract the text of a PDF with `scripts/extract.sh`.\n\n| flag | meaning |\n|---|---|\n| `-l` | layout |\n")
        .file("scripts/extract.sh", "#!/bin/sh\npdftotext \"$1\" -\n", true)
        .write(&repository.join("pdf-tools"));
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/example/pdf-tools.git",
        ],
        &["add", "."],
        &[
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "commit",
            "-q",
            "-m",
            "pdf-tools 1.0.0",
        ],
    ] {
        let output = run(Command::new("git").args(args).current_dir(&repository));
        assert_eq!(output.code, 0, "git {args:?}: {output:?}");
    }
    let output = registry.publisher(&[
        "publish",
        repository.join("pdf-tools").to_str().unwrap(),
        "--provenance",
        "--registry",
        registry.url(),
        "--token",
        registry.token(),
    ]);
    assert_eq!(output.code, 0, "{output:?}");
    let head = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&repository));
    let commit = head.stdout.trim().to_owned();
    assert_eq!(commit.len(), 40, "{head:?}");
    registry.publish(
        &Skill::new("pdf-tools", "2.0.0")
            .description("Extracts text and tables from PDF files.")
            .body("# PDF tools 2\n"),
    );
    let yank = run(ctx.skillpkg_command().args([
        "yank",
        "pdf-tools@2.0.0",
        "--reason",
        "<script>alert('reason')</script>",
        "--registry",
        registry.url(),
        "--token",
        registry.token(),
    ]));
    assert_eq!(yank.code, 0, "{yank:?}");
    registry.publish(
        &Skill::new("csv-report", "0.3.0")
            .description("Turns CSV files into reports with totals & \"averages\" > none."),
    );
    registry.publish(
        &Skill::new("harmless", "1.0.0")
            .description("A skill whose instructions try to run in the page.")
            .body(HOSTILE_BODY),
    );
    commit
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_work_in_a_browser_from_the_server_and_from_nginx() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let commit = publish_skills(&registry, &ctx);
    let driver = Driver::start();
    visit(
        &driver,
        registry.url().trim_end_matches('/'),
        "serve",
        &commit,
    )
    .await;

    // The same tree under nginx: the pages need nothing but a static
    // host.
    let nginx = Nginx::serve(&registry.public());
    visit(&driver, nginx.url(), "nginx", &commit).await;
}

#[test]
fn a_page_request_with_html_in_the_name_is_not_found_and_not_html() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let client = reqwest::blocking::Client::new();
    // The home page is HTML, under the pages' policy, from server and
    // nginx alike.
    let nginx = Nginx::serve(&registry.public());
    for base in [registry.url().trim_end_matches('/'), nginx.url()] {
        let response = client.get(format!("{base}/")).send().unwrap();
        assert_eq!(response.status(), 200, "{base}");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|value| value.to_str().unwrap().to_owned())
        };
        let kind = header("content-type").unwrap_or_default();
        assert!(kind.starts_with("text/html"), "{base}: {kind}");
        assert_eq!(
            header("content-security-policy").as_deref(),
            Some(skillpkg_tests::PAGE_POLICY),
            "{base}"
        );
        assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    }
    for path in [
        "skills/%3Cscript%3Ealert(1)%3C%2Fscript%3E.html",
        "skills/<img src=x onerror=alert(1)>.html",
        "skills/pdf\"><script>.html",
    ] {
        let response = client
            .get(format!("{}/{path}", registry.url().trim_end_matches('/')))
            .send()
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let kind = response
            .headers()
            .get("content-type")
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert!(!kind.contains("html"), "{path}: {kind}");
        let body = response.text().unwrap();
        assert!(
            !body.contains("<script") && !body.contains("<img"),
            "{path}: {body}"
        );
    }
}

#[test]
fn pages_follow_each_change_and_a_new_version_of_them_rewrites_every_page() {
    let ctx = TestContext::new();
    let mut registry = TestRegistry::start(&ctx);
    let public = registry.public();
    let read = |path: &str| fs_err::read_to_string(public.join(path)).unwrap();
    registry.publish(&Skill::new("pdf-tools", "1.0.0").description("Reads PDFs."));
    registry.publish(&Skill::new("csv-report", "1.0.0").description("Reports CSVs."));
    // A skill named `index` has a page like any other, apart from the list.
    registry.publish(&Skill::new("index", "1.0.0").description("Indexes things."));
    assert!(read("skills/pdf-tools.html").contains("<h1>pdf-tools</h1>"));
    assert!(read("skills/index.html").contains("<h1>index</h1>"));
    // A publish rewrites the skill's page; a yank marks it.
    registry.publish(&Skill::new("pdf-tools", "1.1.0").description("Reads PDFs, faster."));
    assert!(read("skills/pdf-tools.html").contains("Reads PDFs, faster."));
    let yank = run(ctx.skillpkg_command().args([
        "yank",
        "pdf-tools@1.1.0",
        "--reason",
        "slow after all",
        "--registry",
        registry.url(),
        "--token",
        registry.token(),
    ]));
    assert_eq!(yank.code, 0, "{yank:?}");
    let page = read("skills/pdf-tools.html");
    assert!(page.contains("yanked</strong>: slow after all"), "{page}");
    assert!(page.contains("<p class=\"lede\">Reads PDFs.</p>"), "{page}");
    // The list of every skill follows too (written with the discovery
    // index, shortly after a change).
    assert!(skillpkg_tests::wait_until(Duration::from_secs(10), || {
        let list = read("skills.html");
        list.contains("pdf-tools")
            && list.contains("csv-report")
            && list.contains("skills/index.html")
    }));
    assert!(read("skills/index.html").contains("<h1>index</h1>"));

    // Pages written by another version of them (or by none): a restarted
    // server writes them all again; its own it leaves.
    fs_err::write(public.join("index.html"), "old home").unwrap();
    fs_err::write(public.join("skills/pdf-tools.html"), "old page").unwrap();
    fs_err::remove_file(public.join("skills/csv-report.html")).unwrap();
    registry.server_mut().kill();
    registry.replace_server(skillpkg_tests::registry::RegistryServer::start(
        registry.data(),
        &[],
    ));
    assert!(read("index.html").contains("Find a skill"));
    assert!(read("skills/pdf-tools.html").contains("<h1>pdf-tools</h1>"));
    assert!(read("skills/csv-report.html").contains("<h1>csv-report</h1>"));
    fs_err::write(public.join("skills/pdf-tools.html"), "kept").unwrap();
    fs_err::remove_file(public.join("skills/csv-report.html")).unwrap();
    registry.server_mut().kill();
    registry.replace_server(skillpkg_tests::registry::RegistryServer::start(
        registry.data(),
        &[],
    ));
    assert_eq!(read("skills/pdf-tools.html"), "kept");
    assert!(read("skills/csv-report.html").contains("<h1>csv-report</h1>"));
}
