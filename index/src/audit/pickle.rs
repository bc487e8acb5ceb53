//! Pickles that run a program when loaded.
//!
//! Python's `pickle.load` calls whatever callables the data names: a
//! "pickle" shipped as a model, a cache or an index (`fonts.idx`,
//! `model.pkl`) whose data names `os.system` runs a command in the hands
//! of any script that loads it. The audit does not interpret pickles; it
//! looks for the two ways a pickle names a callable, the `GLOBAL` and
//! `INST` opcodes (`cos\nsystem\n`, protocols 0 to 3) and two strings
//! pushed for `STACK_GLOBAL` (protocol 4 and later), and reports one that
//! names a module whose functions run programs or code. Data pickles name
//! their classes (`numpy.core.multiarray`, `collections`), not these.

/// Modules whose functions, called by a pickle, run a program or code, or
/// reach the network or the file system with the caller's rights: the
/// module alone is reason enough.
const MODULES: &[&str] = &[
    "os",
    "posix",
    "nt",
    "subprocess",
    "pty",
    "commands",
    "runpy",
    "socket",
    "shutil",
    "webbrowser",
    "ctypes",
    "importlib",
    "code",
    "marshal",
    "pickle",
    "_pickle",
    "urllib.request",
    "requests",
    "httpx",
];

/// Built-ins that run code or reach what a module holds.
const BUILTINS: &[&str] = &[
    "eval",
    "exec",
    "execfile",
    "compile",
    "__import__",
    "getattr",
    "open",
    "apply",
    "globals",
];

/// Why `bytes`, when they are a pickle, run something when loaded: the
/// callable named, as `module.name`.
pub(crate) fn runs_on_load(bytes: &[u8]) -> Option<String> {
    if !is_pickle(bytes) {
        return None;
    }
    // Each string pushed, with the offset past it.
    let mut strings: Vec<(usize, &[u8])> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            // GLOBAL and INST: a module and a name, each ended by a LF.
            b'c' | b'i' => {
                if let Some(named) = line_pair(&bytes[at + 1..]).and_then(|(m, n)| judge(m, n)) {
                    return Some(named);
                }
            }
            // SHORT_BINUNICODE, SHORT_BINSTRING: one byte of length.
            0x8c | b'U' => {
                if let Some(&length) = bytes.get(at + 1) {
                    let end = at + 2 + usize::from(length);
                    if let Some(text) = bytes.get(at + 2..end) {
                        strings.push((end, text));
                    }
                }
            }
            // BINUNICODE, BINSTRING: four bytes of length.
            b'X' | b'T' => {
                if let Some(length) = bytes.get(at + 1..at + 5) {
                    let length =
                        u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
                    if length <= 256
                        && let Some(text) = bytes.get(at + 5..at + 5 + length)
                    {
                        strings.push((at + 5 + length, text));
                    }
                }
            }
            _ => {}
        }
        at += 1;
    }
    // STACK_GLOBAL takes the two strings pushed just before it; memo
    // PUTs may sit between them and after.
    strings.windows(2).find_map(|pair| {
        let ((module_end, module), (name_end, name)) = (pair[0], pair[1]);
        let pushed_next = bytes
            .get(past_memo(bytes, module_end))
            .is_some_and(|&byte| matches!(byte, 0x8c | b'U' | b'X' | b'T'));
        let global = bytes.get(past_memo(bytes, name_end)) == Some(&0x93);
        (pushed_next && global)
            .then(|| judge(module, name))
            .flatten()
    })
}

/// The offset past the memo opcodes at `at` (MEMOIZE, PUT, BINPUT,
/// LONG_BINPUT), which store the value on top and change nothing else.
fn past_memo(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(0x94) => at += 1,
            Some(b'q') => at += 2,
            Some(b'r') => at += 5,
            Some(b'p') => match bytes[at..].iter().position(|&byte| byte == b'\n') {
                Some(end) => at += end + 1,
                None => return at,
            },
            _ => return at,
        }
    }
}

/// True when `bytes` start as a pickle does: the protocol 2 to 5 header,
/// or, for the text protocols, a `GLOBAL` or `MARK` and a `STOP` at the
/// end.
pub(crate) fn is_pickle(bytes: &[u8]) -> bool {
    match bytes {
        [0x80, 2..=5, ..] => true,
        [b'c' | b'(', ..] => bytes.trim_ascii_end().ends_with(b"."),
        _ => false,
    }
}

/// The two LF-ended lines at the start of `bytes`.
fn line_pair(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let first = bytes.iter().take(64).position(|&byte| byte == b'\n')?;
    let rest = &bytes[first + 1..];
    let second = rest.iter().take(64).position(|&byte| byte == b'\n')?;
    Some((&bytes[..first], &rest[..second]))
}

/// `module.name`, when calling it runs something.
fn judge(module: &[u8], name: &[u8]) -> Option<String> {
    let module = std::str::from_utf8(module).ok()?;
    let name = std::str::from_utf8(name).ok()?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return None;
    }
    let root = module.split('.').next().unwrap_or(module);
    let runs = MODULES.contains(&module)
        || MODULES.contains(&root)
        || matches!(module, "builtins" | "__builtin__") && BUILTINS.contains(&name);
    runs.then(|| format!("{module}.{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_callables_a_pickle_runs_in_every_protocol() {
        // protocol 0: `pickle.dumps(X, 0)` where X.__reduce__ gives os.system
        assert_eq!(
            runs_on_load(b"cposix\nsystem\np0\n(Vid\np1\ntp2\nRp3\n.").as_deref(),
            Some("posix.system")
        );
        // protocol 2: GLOBAL
        assert_eq!(
            runs_on_load(
                b"\x80\x02cbuiltins\neval\nq\x00X\x04\x00\x00\x001+1q\x01\x85q\x02Rq\x03."
            )
            .as_deref(),
            Some("builtins.eval")
        );
        // protocol 4: STACK_GLOBAL over two short strings, memoised
        let four = b"\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94.";
        assert_eq!(runs_on_load(four).as_deref(), Some("posix.system"));
        let subprocess = b"\x80\x05\x8c\nsubprocess\x94\x8c\x05Popen\x94\x93\x94.";
        assert_eq!(
            runs_on_load(subprocess).as_deref(),
            Some("subprocess.Popen")
        );
    }

    #[test]
    fn data_pickles_and_other_files_are_not_reported() {
        // collections.OrderedDict of a string, protocol 4
        let data = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01a\x94K\x01s.";
        assert_eq!(runs_on_load(data), None);
        assert_eq!(runs_on_load(b"\x80\x04K\x01."), None);
        // builtins that only build values
        assert_eq!(runs_on_load(b"\x80\x02cbuiltins\nset\nq\x00]\x85R."), None);
        // text that is no pickle, with the same lines in it
        assert_eq!(runs_on_load(b"# notes\ncos\nsystem\n"), None);
        assert_eq!(runs_on_load(b"PNG\x80\x02cos\nsystem\n"), None);
        // two strings of data side by side are no STACK_GLOBAL
        assert_eq!(
            runs_on_load(b"\x80\x04}\x94\x8c\x02os\x94\x8c\x06system\x94s."),
            None
        );
    }
}
