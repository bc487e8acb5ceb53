//! The static tree as the server sends it: ranges, `Last-Modified` and
//! `If-Modified-Since`, precompressed siblings, ETags and 304s, `HEAD`,
//! dot paths however they are spelled, and which reads count as downloads.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::{Duration, SystemTime};

use reqwest::blocking::Response;
use reqwest::header::HeaderMap;
use skillpkg_tests::{Nginx, tarball_described};

use super::Fixture;

const INDEX: &str = "index/3/p/pdf";
const ARCHIVE: &str = "dl/pdf/1.0.0/pdf-1.0.0.tgz";

/// A server with `pdf@1.0.0` published.
fn published() -> Fixture {
    let fixture = Fixture::new(&[]);
    let (status, body) = fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described(
            "pdf",
            "1.0.0",
            "Reads PDFs, with a description long enough to cut.",
        ),
    );
    assert_eq!(status, 201, "{body}");
    fixture
}

impl Fixture {
    /// GETs `path` of the tree with the headers `with`.
    fn get(&self, path: &str, with: &[(&str, &str)]) -> Response {
        let mut request = self.client.get(format!("{}/{path}", self.server.url()));
        for (name, value) in with {
            request = request.header(*name, *value);
        }
        request.send().unwrap()
    }

    fn file(&self, path: &str) -> Vec<u8> {
        fs_err::read(self.server.public().join(path)).unwrap()
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|value| value.to_str().unwrap())
}

/// Sets the modification time of `path`.
fn set_modified(path: &Path, time: SystemTime) {
    fs_err::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .file()
        .set_modified(time)
        .unwrap();
}

#[test]
fn a_range_gets_206_with_those_bytes_and_a_range_past_the_end_416() {
    let fixture = published();
    let index = fixture.file(INDEX);
    let archive = fixture.file(ARCHIVE);
    assert!(archive.len() > 100, "{}", archive.len());
    let etag = header(fixture.get(INDEX, &[]).headers(), "etag")
        .unwrap()
        .to_owned();

    let part = fixture.get(INDEX, &[("Range", "bytes=4-19")]);
    assert_eq!(part.status(), 206);
    let headers = part.headers().clone();
    assert_eq!(
        header(&headers, "content-range"),
        Some(format!("bytes 4-19/{}", index.len()).as_str())
    );
    assert_eq!(header(&headers, "content-length"), Some("16"));
    assert_eq!(header(&headers, "etag"), Some(etag.as_str()));
    assert_eq!(header(&headers, "accept-ranges"), Some("bytes"));
    assert_eq!(
        header(&headers, "cache-control"),
        Some("public, max-age=60, must-revalidate")
    );
    assert_eq!(part.bytes().unwrap(), index[4..20]);

    // The last bytes, and an archive from an offset to its end.
    let tail = fixture.get(INDEX, &[("Range", "bytes=-10")]);
    assert_eq!(tail.status(), 206);
    assert_eq!(tail.bytes().unwrap(), index[index.len() - 10..]);
    let rest = fixture.get(ARCHIVE, &[("Range", "bytes=100-")]);
    assert_eq!(rest.status(), 206);
    assert_eq!(
        header(rest.headers(), "content-type"),
        Some("application/gzip")
    );
    assert_eq!(rest.bytes().unwrap(), archive[100..]);

    // `If-Range`: the range while the file is the one named, else the
    // whole file.
    let same = fixture.get(INDEX, &[("Range", "bytes=0-1"), ("If-Range", &etag)]);
    assert_eq!(same.status(), 206);
    let changed = fixture.get(INDEX, &[("Range", "bytes=0-1"), ("If-Range", "\"other\"")]);
    assert_eq!(changed.status(), 200);
    assert_eq!(changed.bytes().unwrap(), index);
    // Several ranges: the whole file.
    let several = fixture.get(INDEX, &[("Range", "bytes=0-1,5-6")]);
    assert_eq!(several.status(), 200);
    assert_eq!(several.bytes().unwrap(), index);

    let past = fixture.get(INDEX, &[("Range", &format!("bytes={}-", index.len()))]);
    assert_eq!(past.status(), 416);
    assert_eq!(
        header(past.headers(), "content-range"),
        Some(format!("bytes */{}", index.len()).as_str())
    );
    let body: serde_json::Value = past.json().unwrap();
    assert_eq!(body["code"], "range_not_satisfiable", "{body}");
    assert_eq!(body["errors"][0]["code"], "range-not-satisfiable", "{body}");

    // nginx, serving the same folder, answers the same.
    let nginx = Nginx::serve(&fixture.server.public());
    for (path, range) in [
        (INDEX, "bytes=4-19"),
        (INDEX, "bytes=-10"),
        (INDEX, "bytes=0-100000"),
        (ARCHIVE, "bytes=100-"),
        (INDEX, &format!("bytes={}-", index.len())),
    ] {
        let ours = fixture.get(path, &[("Range", range)]);
        let theirs = fixture
            .client
            .get(format!("{}/{path}", nginx.url()))
            .header("Range", range)
            .send()
            .unwrap();
        assert_eq!(ours.status(), theirs.status(), "{path} {range}");
        for name in ["content-range", "last-modified"] {
            assert_eq!(
                header(ours.headers(), name),
                header(theirs.headers(), name),
                "{name} of {path} {range}"
            );
        }
        if ours.status() == 206 {
            assert_eq!(ours.bytes().unwrap(), theirs.bytes().unwrap());
        }
    }
}

#[test]
fn files_have_last_modified_and_if_modified_since_gets_304() {
    let fixture = published();
    for path in [INDEX, ARCHIVE] {
        let first = fixture.get(path, &[]);
        assert_eq!(first.status(), 200);
        let modified = header(first.headers(), "last-modified")
            .unwrap_or_else(|| panic!("no Last-Modified on {path}"))
            .to_owned();
        let etag = header(first.headers(), "etag").unwrap().to_owned();
        let cache = header(first.headers(), "cache-control").unwrap().to_owned();

        let again = fixture.get(path, &[("If-Modified-Since", &modified)]);
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(again.headers(), "etag"), Some(etag.as_str()));
        assert_eq!(
            header(again.headers(), "cache-control"),
            Some(cache.as_str())
        );
        assert!(again.bytes().unwrap().is_empty());

        let older = fixture.get(
            path,
            &[("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT")],
        );
        assert_eq!(older.status(), 200, "{path}");
        // `If-None-Match` decides when both are sent (RFC 9110, 13.1.3).
        let other = fixture.get(
            path,
            &[
                ("If-None-Match", "\"other\""),
                ("If-Modified-Since", &modified),
            ],
        );
        assert_eq!(other.status(), 200, "{path}");
        assert_eq!(other.bytes().unwrap(), fixture.file(path));
    }
}

#[test]
fn a_precompressed_sibling_goes_to_clients_that_take_it_and_the_file_to_the_others() {
    use flate2::write::GzEncoder;

    let fixture = published();
    let index = fixture.file(INDEX);
    let public = fixture.server.public();
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&index).unwrap();
    let gzipped = encoder.finish().unwrap();
    let (gz, br) = (
        public.join(format!("{INDEX}.gz")),
        public.join(format!("{INDEX}.br")),
    );
    fs_err::write(&gz, &gzipped).unwrap();
    // Written after the file, and dated after it whatever the clock's
    // resolution.
    let later = SystemTime::now() + Duration::from_secs(60);
    set_modified(&gz, later);

    let plain = fixture.get(INDEX, &[]);
    assert_eq!(plain.status(), 200);
    let plain_etag = header(plain.headers(), "etag").unwrap().to_owned();
    assert_eq!(header(plain.headers(), "content-encoding"), None);
    assert_eq!(header(plain.headers(), "vary"), Some("accept-encoding"));
    assert_eq!(plain.bytes().unwrap(), index);

    let compressed = fixture.get(INDEX, &[("Accept-Encoding", "gzip, deflate")]);
    assert_eq!(compressed.status(), 200);
    let headers = compressed.headers().clone();
    assert_eq!(header(&headers, "content-encoding"), Some("gzip"));
    assert_eq!(header(&headers, "vary"), Some("accept-encoding"));
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(
        header(&headers, "content-length"),
        Some(gzipped.len().to_string().as_str())
    );
    let gz_etag = header(&headers, "etag").unwrap().to_owned();
    assert_ne!(gz_etag, plain_etag, "two forms, two ETags");
    let body = compressed.bytes().unwrap();
    assert_eq!(body, gzipped);
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated, index);

    // Each form revalidates against its own ETag.
    let again = fixture.get(
        INDEX,
        &[("Accept-Encoding", "gzip"), ("If-None-Match", &gz_etag)],
    );
    assert_eq!(again.status(), 304);
    assert_eq!(header(again.headers(), "etag"), Some(gz_etag.as_str()));
    let other_form = fixture.get(INDEX, &[("If-None-Match", &gz_etag)]);
    assert_eq!(other_form.status(), 200);
    assert_eq!(other_form.bytes().unwrap(), index);

    // A client that refuses gzip, or prefers the file as it is.
    for refusing in ["gzip;q=0", "identity, gzip;q=0.5", "compress"] {
        let answer = fixture.get(INDEX, &[("Accept-Encoding", refusing)]);
        assert_eq!(
            header(answer.headers(), "content-encoding"),
            None,
            "{refusing}"
        );
        assert_eq!(answer.bytes().unwrap(), index, "{refusing}");
    }

    // Brotli, where there is a `.br` (the server sends its bytes as they
    // are) and the client takes it.
    fs_err::write(&br, b"brotli bytes").unwrap();
    set_modified(&br, later);
    let brotli = fixture.get(INDEX, &[("Accept-Encoding", "gzip, br")]);
    assert_eq!(header(brotli.headers(), "content-encoding"), Some("br"));
    assert_eq!(brotli.bytes().unwrap(), &b"brotli bytes"[..]);
    let gzip_first = fixture.get(INDEX, &[("Accept-Encoding", "gzip, br;q=0.5")]);
    assert_eq!(
        header(gzip_first.headers(), "content-encoding"),
        Some("gzip")
    );

    // A sibling older than its file (the file was rewritten since) is
    // never sent.
    set_modified(&public.join(INDEX), later + Duration::from_secs(60));
    let stale = fixture.get(INDEX, &[("Accept-Encoding", "gzip, br")]);
    assert_eq!(header(stale.headers(), "content-encoding"), None);
    assert_eq!(header(stale.headers(), "vary"), None);
    assert_eq!(stale.bytes().unwrap(), index);
}

#[test]
fn etags_still_get_304_and_dot_paths_are_refused_however_spelled() {
    let fixture = published();
    let etag = header(fixture.get(INDEX, &[]).headers(), "etag")
        .unwrap()
        .to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && !etag.starts_with("W/"),
        "a strong ETag: {etag}"
    );
    for (condition, status) in [
        (etag.clone(), 304),
        (format!("\"other\", {etag}"), 304),
        (format!("W/{etag}"), 304),
        ("*".to_owned(), 304),
        ("\"other\"".to_owned(), 200),
    ] {
        let answer = fixture.get(INDEX, &[("If-None-Match", &condition)]);
        assert_eq!(answer.status(), status, "{condition}");
        if status == 304 {
            assert_eq!(header(answer.headers(), "etag"), Some(etag.as_str()));
            assert!(answer.bytes().unwrap().is_empty());
        }
    }

    // Files whose names start with a dot, as temporary files and a
    // mirror's record have: never served, percent-encoded or not.
    let public = fixture.server.public();
    fs_err::write(public.join(".secret"), "temporary").unwrap();
    fs_err::write(public.join("index/.skillpkg-tmp-1"), "temporary").unwrap();
    for path in [
        ".secret",
        "%2esecret",
        "%2Esecret",
        "index/.skillpkg-tmp-1",
        "index/%2eskillpkg-tmp-1",
        "index/%2E%73killpkg-tmp-1",
        "index/3/p/..%2f..%2f.skillpkg-tmp-1",
        "index//3/p/pdf",
    ] {
        let answer = fixture.get(path, &[]);
        assert_eq!(answer.status(), 404, "{path}");
        let body: serde_json::Value = answer.json().unwrap();
        assert_eq!(body["code"], "not_found", "{path}: {body}");
    }
    // Percent-encoded letters of a servable path are decoded.
    assert_eq!(fixture.get("index/3/p/%70df", &[]).status(), 200);
    // `.well-known` is served.
    assert!(
        skillpkg_tests::wait_until(Duration::from_secs(10), || {
            fixture
                .get(".well-known/agent-skills/index.json", &[])
                .status()
                == 200
        }),
        "the discovery index is served"
    );
}

/// The headers of a file answer that say what the file is, without the
/// date of the answer.
fn file_headers(answer: &Response) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = answer
        .headers()
        .iter()
        .filter(|(name, _)| *name != "date")
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    headers
}

#[test]
fn a_whole_get_has_the_same_headers_whether_read_whole_or_streamed() {
    let fixture = published();
    // Larger than what is read whole (64 KiB).
    let large: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let public = fixture.server.public();
    fs_err::write(public.join("large.json"), &large).unwrap();
    fs_err::write(public.join(format!("{INDEX}.gz")), b"gzip bytes").unwrap();
    set_modified(
        &public.join(format!("{INDEX}.gz")),
        SystemTime::now() + Duration::from_secs(60),
    );
    let old_date = ("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT");
    for (path, encoding) in [
        (INDEX, "identity"),
        (INDEX, "gzip"),
        (ARCHIVE, "identity"),
        ("large.json", "identity"),
    ] {
        // A plain GET, and one with a date condition that ServeFile
        // answers with the whole file.
        let plain = fixture.get(path, &[("Accept-Encoding", encoding)]);
        let dated = fixture.get(path, &[("Accept-Encoding", encoding), old_date]);
        assert_eq!(
            (plain.status().as_u16(), dated.status().as_u16()),
            (200, 200),
            "{path}"
        );
        assert_eq!(file_headers(&plain), file_headers(&dated), "{path}");
        for name in ["etag", "last-modified", "accept-ranges", "content-length"] {
            assert!(plain.headers().contains_key(name), "{name} of {path}");
        }
        assert_eq!(plain.bytes().unwrap(), dated.bytes().unwrap(), "{path}");
    }
    assert_eq!(fixture.get("large.json", &[]).bytes().unwrap(), large);
}

/// Sends a raw `HEAD` and returns everything the server sent back.
fn raw_head(address: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "HEAD /{path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn a_head_has_the_headers_of_a_get_and_no_body() {
    let fixture = published();
    for path in [INDEX, ARCHIVE] {
        let answer = raw_head(fixture.server.address(), path);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        assert_eq!(body, "", "a HEAD has no body: {answer}");
        let head = head.to_ascii_lowercase();
        let length = fixture.file(path).len();
        assert!(
            head.contains(&format!("\r\ncontent-length: {length}\r\n")),
            "{head}"
        );
        for name in ["etag", "last-modified", "cache-control", "content-type"] {
            assert!(head.contains(&format!("\r\n{name}: ")), "{name}: {head}");
        }
    }
}

#[test]
fn only_a_full_get_of_an_archive_counts_as_a_download() {
    let fixture = published();
    let archive = fixture.file(ARCHIVE);
    let etag = header(fixture.get(ARCHIVE, &[]).headers(), "etag")
        .unwrap()
        .to_owned();
    let modified = header(fixture.get(ARCHIVE, &[]).headers(), "last-modified")
        .unwrap()
        .to_owned();
    // Two full GETs so far; these count for nothing.
    for (with, status) in [
        (vec![("Range", "bytes=0-9")], 206),
        (vec![("Range", "bytes=100000-")], 416),
        (vec![("If-None-Match", etag.as_str())], 304),
        (vec![("If-Modified-Since", modified.as_str())], 304),
    ] {
        assert_eq!(fixture.get(ARCHIVE, &with).status(), status, "{with:?}");
    }
    let head = fixture
        .client
        .head(format!("{}/{ARCHIVE}", fixture.server.url()))
        .send()
        .unwrap();
    assert_eq!(head.status(), 200);
    // A third full GET, a gzip-accepting one.
    let full = fixture.get(ARCHIVE, &[("Accept-Encoding", "gzip")]);
    assert_eq!(full.status(), 200);
    assert_eq!(full.bytes().unwrap(), archive);

    // A publish in the same search shard writes the counts into it.
    let (status, body) = fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.1.0",
        tarball_described("pdf", "1.1.0", "Reads PDFs."),
    );
    assert_eq!(status, 201, "{body}");
    let public = fixture.server.public();
    let search =
        skillpkg_tests::search_entries(|path| fs_err::read_to_string(public.join(path)).unwrap());
    let pdf = search.iter().find(|entry| entry["name"] == "pdf").unwrap();
    assert_eq!(pdf["downloads"], 3, "{pdf}");
}
