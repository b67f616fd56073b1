//! Rules a running name guard takes on after its start, on the descriptor
//! of [`crate::NameGuardInvocation::updates_fd`]: a warm session's guard
//! serves every command of the session, so the denies of a git repository
//! made by one command reach it this way before the next command starts
//! (R-PATHS-3).
//!
//! One update per line, `protect PATH\n` or `deny PATH\n`, where `PATH` is
//! absolute, holds no NUL or newline byte and has at most
//! [`MAX_UPDATE_PATH`] bytes. `protect` is the guard's `--protect` (on the
//! host: no write, removal or move at or below the path); `deny` is an
//! absolute `--deny` rule (the name may not be created).
//!
//! The reader is fed whatever arrives, in pieces of any size, and keeps at
//! most one line of [`MAX_UPDATE_LINE`] bytes; a longer line, an unknown
//! word, a bad path or more than [`MAX_UPDATES`] updates is a
//! [`UpdateProblem`], upon which a guard fails closed.

/// Longest path of an update, in bytes (Linux's `PATH_MAX`).
pub const MAX_UPDATE_PATH: usize = 4096;
/// Longest line, with its word, space and newline.
pub const MAX_UPDATE_LINE: usize = MAX_UPDATE_PATH + 16;
/// Most updates one guard takes.
pub const MAX_UPDATES: usize = 65_536;

/// One rule added to a running guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardUpdate {
    /// Protect this path and everything below it (host confinement).
    Protect(Vec<u8>),
    /// Refuse creating this name.
    Deny(Vec<u8>),
}

/// What is wrong with the update stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateProblem {
    /// A line longer than [`MAX_UPDATE_LINE`].
    #[error("an update line longer than {MAX_UPDATE_LINE} bytes")]
    LineTooLong,
    /// A line that is neither `protect PATH` nor `deny PATH`.
    #[error("an update line that is neither `protect PATH` nor `deny PATH`")]
    UnknownUpdate,
    /// A path that is not absolute, is longer than [`MAX_UPDATE_PATH`] or
    /// holds a NUL byte.
    #[error("an update path that is not absolute, too long or holds a NUL byte")]
    BadPath,
    /// More than [`MAX_UPDATES`] updates.
    #[error("more than {MAX_UPDATES} updates")]
    TooManyUpdates,
}

fn path_ok(p: &[u8]) -> bool {
    p.first() == Some(&b'/') && p.len() <= MAX_UPDATE_PATH && !p.contains(&0) && !p.contains(&b'\n')
}

impl GuardUpdate {
    /// The update's line, newline included; `None` for a path the format
    /// cannot carry (see [`UpdateProblem::BadPath`], or a newline in it).
    pub fn to_line(&self) -> Option<Vec<u8>> {
        let (word, path): (&[u8], &[u8]) = match self {
            GuardUpdate::Protect(p) => (b"protect ", p),
            GuardUpdate::Deny(p) => (b"deny ", p),
        };
        if !path_ok(path) {
            return None;
        }
        let mut line = Vec::with_capacity(word.len() + path.len() + 1);
        line.extend_from_slice(word);
        line.extend_from_slice(path);
        line.push(b'\n');
        Some(line)
    }

    fn from_line(line: &[u8]) -> Result<GuardUpdate, UpdateProblem> {
        if let Some(p) = line.strip_prefix(b"protect ") {
            path_ok(p)
                .then(|| GuardUpdate::Protect(p.to_vec()))
                .ok_or(UpdateProblem::BadPath)
        } else if let Some(p) = line.strip_prefix(b"deny ") {
            path_ok(p)
                .then(|| GuardUpdate::Deny(p.to_vec()))
                .ok_or(UpdateProblem::BadPath)
        } else {
            Err(UpdateProblem::UnknownUpdate)
        }
    }
}

/// The reading end's state: the unfinished line and the count so far.
#[derive(Debug, Default)]
pub struct UpdateReader {
    line: Vec<u8>,
    /// Inside a line already found too long: skipped to its newline.
    skipping: bool,
    taken: usize,
}

impl UpdateReader {
    /// A reader at the start of the stream.
    pub fn new() -> UpdateReader {
        UpdateReader::default()
    }

    /// Takes `bytes` and returns each line they complete, in order. After
    /// [`UpdateProblem::TooManyUpdates`] every further line is that
    /// problem.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Result<GuardUpdate, UpdateProblem>> {
        let mut out = Vec::new();
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            if !self.skipping {
                if self.line.len() + body.len() > MAX_UPDATE_LINE {
                    self.line.clear();
                    self.skipping = true;
                    out.push(Err(UpdateProblem::LineTooLong));
                } else {
                    self.line.extend_from_slice(body);
                }
            }
            if !ends {
                continue;
            }
            if self.skipping {
                self.skipping = false;
                continue;
            }
            let line = std::mem::take(&mut self.line);
            if self.taken >= MAX_UPDATES {
                out.push(Err(UpdateProblem::TooManyUpdates));
                continue;
            }
            self.taken += 1;
            out.push(GuardUpdate::from_line(&line));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_read_the_same() {
        let updates = [
            GuardUpdate::Protect(b"/w/sub/.git/hooks".to_vec()),
            GuardUpdate::Deny(b"/w/sub/.git/commondir".to_vec()),
        ];
        let stream: Vec<u8> = updates.iter().flat_map(|u| u.to_line().unwrap()).collect();
        for cut in 0..stream.len() {
            let mut r = UpdateReader::new();
            let mut got = r.feed(&stream[..cut]);
            got.extend(r.feed(&stream[cut..]));
            assert_eq!(got, updates.iter().cloned().map(Ok).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_long_line_is_one_problem_and_the_next_line_reads() {
        let mut r = UpdateReader::new();
        let mut stream = b"protect /".to_vec();
        stream.extend(std::iter::repeat_n(b'a', MAX_UPDATE_LINE));
        stream.extend_from_slice(b"\ndeny /x\n");
        assert_eq!(
            r.feed(&stream),
            [
                Err(UpdateProblem::LineTooLong),
                Ok(GuardUpdate::Deny(b"/x".to_vec()))
            ]
        );
    }

    #[test]
    fn relative_unknown_and_nul_lines_are_problems() {
        let mut r = UpdateReader::new();
        assert_eq!(
            r.feed(b"protect x\nallow /x\ndeny /a\0b\n"),
            [
                Err(UpdateProblem::BadPath),
                Err(UpdateProblem::UnknownUpdate),
                Err(UpdateProblem::BadPath)
            ]
        );
        assert_eq!(GuardUpdate::Deny(b"/a\nb".to_vec()).to_line(), None);
    }
}
