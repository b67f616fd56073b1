//! The program of each architecture's table.

use super::*;
use crate::syscalls::{AARCH64, X86_64};

const SUP: i32 = 7;

fn both() -> [&'static Abi; 2] {
    [&X86_64, &AARCH64]
}

#[test]
fn program_is_well_formed() {
    for abi in both() {
        let p = program(abi, SUP);
        assert!(p.len() < 200, "{}: {} instructions", abi.name, p.len());
        // Every jump lands inside the program.
        for (i, f) in p.iter().enumerate() {
            if f.code & 0x07 == 0x05 {
                assert!(i + 1 + usize::from(f.jt.max(f.jf)) < p.len());
            }
        }
        assert_eq!(p.last().map(|f| f.k), Some(RET_ALLOW));
    }
}
