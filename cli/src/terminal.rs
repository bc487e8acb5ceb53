//! Terminal modes: hiding what the user types while they type a secret.

/// While alive, the terminal does not echo what is typed on it. Restores the
/// previous mode when dropped, also on an early return or a panic.
#[derive(Debug)]
pub struct EchoOff {
    #[cfg(unix)]
    saved: Option<(std::os::fd::OwnedFd, rustix::termios::Termios)>,
}

impl EchoOff {
    /// Turns echo off on `terminal`, if it is a terminal whose mode can be
    /// changed; otherwise does nothing (the secret is then echoed, which is
    /// better than refusing to read it).
    #[cfg(unix)]
    pub fn new(terminal: &impl std::os::fd::AsFd) -> Self {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let saved = terminal.as_fd().try_clone_to_owned().ok().and_then(|fd| {
            let saved = tcgetattr(&fd).ok()?;
            let mut quiet = saved.clone();
            quiet.local_modes -= LocalModes::ECHO;
            tcsetattr(&fd, OptionalActions::Now, &quiet).ok()?;
            Some((fd, saved))
        });
        Self { saved }
    }

    /// Does nothing: echo is left on where there is no termios.
    #[cfg(not(unix))]
    pub fn new<T>(_terminal: &T) -> Self {
        Self {}
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some((fd, saved)) = &self.saved {
            let _ = rustix::termios::tcsetattr(fd, rustix::termios::OptionalActions::Now, saved);
        }
    }
}
