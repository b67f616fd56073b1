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
