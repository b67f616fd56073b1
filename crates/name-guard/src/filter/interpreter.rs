//! A classic BPF interpreter for the handful of instructions the filter
//! uses, run on a synthetic `struct seccomp_data`: what the kernel would
//! answer, without installing anything.

use super::{ALU_AND_K, JEQ_K, JGE_K, JSET_K, LD_W_ABS, RET_K};
use crate::sys::SockFilter;

/// A `struct seccomp_data` (the instruction pointer is never read).
#[derive(Clone, Copy, Debug)]
pub(super) struct Data {
    pub(super) nr: u32,
    pub(super) arch: u32,
    pub(super) args: [u64; 6],
}

impl Data {
    /// Call `nr` of `arch` with `args` (the rest zero).
    pub(super) fn new(arch: u32, nr: u32, args: &[u64]) -> Data {
        let mut all = [0; 6];
        all[..args.len()].copy_from_slice(args);
        Data {
            nr,
            arch,
            args: all,
        }
    }

    /// The 32-bit word at byte offset `off`, as `BPF_LD | BPF_W | BPF_ABS`
    /// reads it on a little-endian machine.
    fn word(&self, off: u32) -> u32 {
        match off {
            0 => self.nr,
            4 => self.arch,
            16..=63 if off.is_multiple_of(4) => {
                let arg = self.args[(off as usize - 16) / 8];
                if off.is_multiple_of(8) {
                    arg as u32
                } else {
                    (arg >> 32) as u32
                }
            }
            _ => panic!("the filter reads offset {off} of seccomp_data"),
        }
    }
}

/// The program's answer for `d` (its `SECCOMP_RET_*` value). Panics on an
/// instruction it does not know or a jump out of the program.
pub(super) fn run(prog: &[SockFilter], d: &Data) -> u32 {
    let mut pc = 0usize;
    let mut a = 0u32;
    loop {
        let Some(f) = prog.get(pc) else {
            panic!("ran off the program at {pc}")
        };
        let jump = |taken: bool| 1 + usize::from(if taken { f.jt } else { f.jf });
        pc += match f.code {
            LD_W_ABS => {
                a = d.word(f.k);
                1
            }
            JEQ_K => jump(a == f.k),
            JGE_K => jump(a >= f.k),
            JSET_K => jump(a & f.k != 0),
            ALU_AND_K => {
                a &= f.k;
                1
            }
            RET_K => return f.k,
            code => panic!("unknown instruction {code:#x} at {pc}"),
        };
    }
}
