//! A loopback TCP proxy that injects faults into a real conversation: it
//! forwards bytes both ways between its clients and an upstream server
//! (a bucket's S3 endpoint, a registry), and a rule looks at each piece a
//! client sends (a request's head arrives in one) and may hold it back,
//! cut the connection, or answer for the server.
//!
//! Being below HTTP, it changes nothing a signature covers: S3 requests
//! signed for the proxy's address reach the server with their `Host` as
//! signed.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// What to do with a piece a client sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward it.
    Pass,
    /// Forward it after this long.
    Delay(Duration),
    /// Close both connections without forwarding it.
    Cut,
    /// Answer `HTTP/1.1 <status>` with an empty body in the server's
    /// place, and close.
    Answer(u16),
}

type Rule = dyn Fn(&[u8]) -> Fault + Send + Sync;

/// The proxy; stops accepting when dropped (connections in flight finish).
pub struct TcpProxy {
    address: SocketAddr,
    stopped: Arc<AtomicBool>,
    faults: Arc<AtomicUsize>,
}

impl std::fmt::Debug for TcpProxy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "TcpProxy({})", self.address)
    }
}

impl TcpProxy {
    /// Starts a proxy on a free loopback port in front of `upstream`,
    /// applying `rule` to every piece its clients send.
    pub fn start(
        upstream: SocketAddr,
        rule: impl Fn(&[u8]) -> Fault + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let address = listener.local_addr().expect("the proxy's address");
        let stopped = Arc::new(AtomicBool::new(false));
        let faults = Arc::new(AtomicUsize::new(0));
        let rule: Arc<Rule> = Arc::new(rule);
        {
            let (stopped, faults) = (Arc::clone(&stopped), Arc::clone(&faults));
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let (rule, faults) = (Arc::clone(&rule), Arc::clone(&faults));
                    std::thread::spawn(move || relay(client, upstream, &*rule, &faults));
                }
            });
        }
        Self {
            address,
            stopped,
            faults,
        }
    }

    /// Returns `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Returns how many pieces the rule did not simply pass.
    pub fn faults(&self) -> usize {
        self.faults.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stopped`.
        let _ = TcpStream::connect(self.address);
    }
}

/// Relays one client connection to a new upstream connection.
fn relay(mut client: TcpStream, upstream: SocketAddr, rule: &Rule, faults: &AtomicUsize) {
    let Ok(mut server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut client_reader), Ok(mut server_writer)) = (client.try_clone(), server.try_clone())
    else {
        return;
    };
    // The server's answers, back as they come.
    let answers = std::thread::spawn(move || {
        let _ = std::io::copy(&mut server, &mut client);
        let _ = client.shutdown(Shutdown::Write);
    });
    let mut piece = vec![0_u8; 64 * 1024];
    loop {
        let read = match client_reader.read(&mut piece) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let fault = rule(&piece[..read]);
        if fault != Fault::Pass {
            faults.fetch_add(1, Ordering::SeqCst);
        }
        match fault {
            Fault::Pass => {}
            Fault::Delay(delay) => std::thread::sleep(delay),
            Fault::Cut => {
                let _ = server_writer.shutdown(Shutdown::Both);
                let _ = client_reader.shutdown(Shutdown::Both);
                break;
            }
            Fault::Answer(status) => {
                let _ = write!(
                    client_reader,
                    "HTTP/1.1 {status} Injected\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = server_writer.shutdown(Shutdown::Both);
                let _ = client_reader.shutdown(Shutdown::Both);
                break;
            }
        }
        if server_writer.write_all(&piece[..read]).is_err() {
            break;
        }
    }
    let _ = server_writer.shutdown(Shutdown::Write);
    let _ = answers.join();
}

/// Returns true if and only if `piece` starts a request `METHOD <path>`
/// whose path contains `part`.
pub fn is_request(piece: &[u8], method: &str, part: &str) -> bool {
    let Some(line_end) = piece.iter().position(|&byte| byte == b'\r') else {
        return false;
    };
    let line = String::from_utf8_lossy(&piece[..line_end]);
    let mut words = line.split(' ');
    words.next() == Some(method) && words.next().is_some_and(|path| path.contains(part))
}
