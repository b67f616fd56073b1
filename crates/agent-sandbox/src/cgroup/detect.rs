//! Where this process's cgroups are, read from `/proc/self/cgroup` and
//! `/proc/self/mountinfo` (pure parsing: the caller passes the text).
//!
//! Input limits: at most [`MAX_LINES`] lines of each file are read and
//! lines longer than [`MAX_LINE`] bytes are skipped; nothing here panics.

use std::path::{Path, PathBuf};

/// Most lines read of either file.
pub(crate) const MAX_LINES: usize = 4096;
/// Longest line considered.
pub(crate) const MAX_LINE: usize = 4096;

/// A cgroup hierarchy this process is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hierarchy {
    /// `true` for the unified (v2) hierarchy.
    pub(crate) unified: bool,
    /// The v1 controllers bound to it (empty for v2: read them from
    /// `cgroup.controllers`).
    pub(crate) controllers: Vec<String>,
    /// This process's cgroup directory in it.
    pub(crate) dir: PathBuf,
}

/// One line of `/proc/self/cgroup`: `ID:CONTROLLERS:PATH`.
fn membership(line: &str) -> Option<(Vec<String>, &str)> {
    let mut parts = line.splitn(3, ':');
    let _id = parts.next()?;
    let controllers = parts.next()?;
    let path = parts.next()?;
    let list = controllers
        .split(',')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    Some((list, path))
}

/// One cgroup mount of `/proc/self/mountinfo`: (unified, super options,
/// mount root, mount point).
fn cgroup_mount(line: &str) -> Option<(bool, Vec<&str>, &str, &str)> {
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let root = *fields.get(3)?;
    let point = *fields.get(4)?;
    let mut right = right.split(' ');
    let fstype = right.next()?;
    let _source = right.next()?;
    let superopts: Vec<&str> = right.next().unwrap_or("").split(',').collect();
    match fstype {
        "cgroup" => Some((false, superopts, root, point)),
        "cgroup2" => Some((true, superopts, root, point)),
        _ => None,
    }
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The hierarchies this process is in and where its cgroup directory is in
/// each, for the mounts that show it (a cgroup path outside a mount's root
/// is not reachable through that mount and is left out).
pub(crate) fn hierarchies(proc_self_cgroup: &str, mountinfo: &str) -> Vec<Hierarchy> {
    let lines = |text: &'_ str| -> Vec<String> {
        text.lines()
            .take(MAX_LINES)
            .filter(|l| l.len() <= MAX_LINE)
            .map(str::to_string)
            .collect()
    };
    let mounts: Vec<String> = lines(mountinfo);
    let mounts: Vec<(bool, Vec<&str>, &str, &str)> =
        mounts.iter().filter_map(|l| cgroup_mount(l)).collect();
    let mut out = Vec::new();
    for line in lines(proc_self_cgroup) {
        let Some((controllers, path)) = membership(&line) else {
            continue;
        };
        let unified = controllers.is_empty();
        let mount = mounts.iter().find(|(v2, opts, _, _)| {
            if unified {
                *v2
            } else {
                !*v2 && controllers.iter().all(|c| opts.contains(&c.as_str()))
            }
        });
        let Some((_, _, root, point)) = mount else {
            continue;
        };
        let root = unescape(root);
        let Ok(rel) = Path::new(path).strip_prefix(&root) else {
            continue;
        };
        if rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        out.push(Hierarchy {
            unified,
            controllers: if unified {
                Vec::new()
            } else {
                controllers
                    .into_iter()
                    .filter(|c| !c.starts_with("name="))
                    .collect()
            },
            dir: PathBuf::from(unescape(point)).join(rel),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_controllers_and_the_unified_mount_of_a_hybrid_host() {
        let cgroup = "9:name=systemd:/\n8:pids:/\n4:memory:/jobs/j1\n1:cpu:/\n0::/\n";
        let h = hierarchies(cgroup, MOUNTINFO);
        let find = |c: &str| h.iter().find(|h| h.controllers.iter().any(|x| x == c));
        assert_eq!(
            find("memory").map(|h| h.dir.clone()),
            Some("/sys/fs/cgroup/memory/jobs/j1".into()),
            "the memory cgroup is where this process is"
        );
        assert_eq!(
            find("pids").map(|h| h.dir.clone()),
            Some("/sys/fs/cgroup/pids".into())
        );
        assert_eq!(
            find("cpu").map(|h| h.dir.clone()),
            Some("/sys/fs/cgroup/cpu".into())
        );
        let v2 = h.iter().find(|h| h.unified).unwrap();
        assert_eq!(v2.dir, PathBuf::from("/sys/fs/cgroup/unified"));
        assert!(
            h.iter()
                .all(|h| h.controllers.iter().all(|c| !c.starts_with("name="))),
            "named hierarchies have no controllers"
        );
    }

    #[test]
    fn a_pure_v2_host_in_a_delegated_subtree() {
        let mountinfo = "25 20 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let h = hierarchies("0::/user.slice/user-1000.slice/app.scope\n", mountinfo);
        assert_eq!(
            h,
            [Hierarchy {
                unified: true,
                controllers: vec![],
                dir: "/sys/fs/cgroup/user.slice/user-1000.slice/app.scope".into()
            }]
        );
    }

    #[test]
    fn paths_outside_a_mount_root_or_with_dot_dot_are_left_out() {
        let mountinfo = "25 20 0:22 /sub /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert!(
            hierarchies("0::/other\n", mountinfo).is_empty(),
            "not under the mount's root"
        );
        assert!(
            hierarchies("0::/sub/../../etc\n", mountinfo).is_empty(),
            "no climbing out"
        );
        let ok = hierarchies("0::/sub/job\n", mountinfo);
        assert_eq!(ok[0].dir, PathBuf::from("/sys/fs/cgroup/job"));
    }

    #[test]
    fn garbage_gives_nothing_and_never_panics() {
        for text in [
            "",
            "::",
            "no colons",
            "1:memory",
            "\0\0:\u{fffd}:/x",
            &"9:".repeat(5000),
        ] {
            let _ = hierarchies(text, text);
            let _ = hierarchies(text, MOUNTINFO);
        }
        assert!(
            hierarchies("4:memory:/x\n", "").is_empty(),
            "no mount, no hierarchy"
        );
    }
}
