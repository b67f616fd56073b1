//! `ARCHITECTURE.md` names every member of the workspace: a crate added
//! without a row in the map fails here.

use std::path::Path;

/// The root's workspace members, as `Cargo.toml` lists them.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let doc: toml::Table = manifest.parse().unwrap();
    doc["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_architecture_map_names_every_workspace_member_and_its_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let members = members(root);
    assert!(members.len() >= 10, "{members:?}");
    for m in &members {
        assert!(
            map.contains(&format!("| `{m}` |")),
            "ARCHITECTURE.md has no row for the member {m}"
        );
        let manifest = std::fs::read_to_string(root.join(m).join("Cargo.toml")).unwrap();
        let doc: toml::Table = manifest.parse().unwrap();
        let package = &doc["package"];
        let name = package["name"].as_str().unwrap();
        let published = package.get("publish").and_then(toml::Value::as_bool) != Some(false);
        if published {
            assert!(
                map.contains(&format!("`{name}`")),
                "ARCHITECTURE.md does not name {m}'s package {name}"
            );
        }
    }
}

/// The `.rs` files below `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_library_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let src = c.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 100, "{}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 600).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split by job: {long:?}");
}
