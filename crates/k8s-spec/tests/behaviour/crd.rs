//! A validator for the subset of OpenAPI v3 that agent-sandbox's CRD
//! schemas use, strict about unknown fields (as `kubectl apply
//! --validate=strict`), and the rendered `Sandbox`, `SandboxTemplate` and
//! `SandboxClaim` objects against the schemas kept under
//! `testdata/agent-sandbox/`. The CEL rules (`x-kubernetes-validations`)
//! are not evaluated.

use serde_json::Value;
use std::sync::OnceLock;

fn crd(file: &str) -> Value {
    let path = format!(
        "{}/testdata/agent-sandbox/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn crds() -> &'static [Value] {
    static CRDS: OnceLock<Vec<Value>> = OnceLock::new();
    CRDS.get_or_init(|| {
        vec![
            crd("agents.x-k8s.io_sandboxes.json"),
            crd("extensions.agents.x-k8s.io_sandboxtemplates.json"),
            crd("extensions.agents.x-k8s.io_sandboxclaims.json"),
            crd("extensions.agents.x-k8s.io_sandboxwarmpools.json"),
        ]
    })
}

/// The schema of `apiVersion` + `kind`, from the served versions.
fn schema_for(api_version: &str, kind: &str) -> Option<&'static Value> {
    let (group, version) = api_version.split_once('/')?;
    crds().iter().find_map(|c| {
        let spec = &c["spec"];
        if spec["group"] != group || spec["names"]["kind"] != kind {
            return None;
        }
        spec["versions"]
            .as_array()?
            .iter()
            .find(|v| v["name"] == version && v["served"] == true)
            .map(|v| &v["schema"]["openAPIV3Schema"])
    })
}

/// Validates an object against its CRD's schema.
pub(crate) fn validate(object: &Value) -> Result<(), String> {
    let schema = schema_for(
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
    )
    .ok_or("no served CRD version for this apiVersion and kind")?;
    check(schema, object, "")
}

fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let fail = |m: String| Err(format!("{}: {m}", if at.is_empty() { "/" } else { at }));
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(v)
    {
        return fail(format!("{v} is not one of {options:?}"));
    }
    if schema["x-kubernetes-int-or-string"] == true {
        return match v {
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
            Value::String(s) => match schema["pattern"].as_str() {
                Some(p) if !regex::Regex::new(p).unwrap().is_match(s) => {
                    fail(format!("{s:?} does not match {p}"))
                }
                _ => Ok(()),
            },
            _ => fail(format!("{v} is neither an integer nor a string")),
        };
    }
    if let Some(any) = schema["anyOf"].as_array()
        && !any.iter().any(|s| check(s, v, at).is_ok())
    {
        return fail(format!("{v} matches none of anyOf"));
    }
    match schema["type"].as_str() {
        Some("object") => {
            let Some(obj) = v.as_object() else {
                return fail(format!("{v} is not an object"));
            };
            for r in schema["required"].as_array().into_iter().flatten() {
                if !obj.contains_key(r.as_str().unwrap()) {
                    return fail(format!("required field {r} is missing"));
                }
            }
            let props = schema["properties"].as_object();
            let extra = &schema["additionalProperties"];
            let open = schema["x-kubernetes-preserve-unknown-fields"] == true
                || (props.is_none() && extra.is_null());
            for (k, val) in obj {
                let path = format!("{at}/{k}");
                if let Some(s) = props.and_then(|p| p.get(k)) {
                    check(s, val, &path)?;
                } else if extra.is_object() {
                    check(extra, val, &path)?;
                } else if !open {
                    return fail(format!("unknown field {k:?}"));
                }
            }
        }
        Some("array") => {
            let Some(items) = v.as_array() else {
                return fail(format!("{v} is not an array"));
            };
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{at}/{i}"))?;
            }
        }
        Some("string") => {
            let Some(s) = v.as_str() else {
                return fail(format!("{v} is not a string"));
            };
            if let Some(max) = schema["maxLength"].as_u64()
                && s.chars().count() as u64 > max
            {
                return fail(format!("longer than {max}"));
            }
            if let Some(min) = schema["minLength"].as_u64()
                && (s.chars().count() as u64) < min
            {
                return fail(format!("shorter than {min}"));
            }
            if let Some(p) = schema["pattern"].as_str()
                && !regex::Regex::new(p).unwrap().is_match(s)
            {
                return fail(format!("{s:?} does not match {p}"));
            }
        }
        Some("integer") => {
            let Some(n) = v.as_i64() else {
                return fail(format!("{v} is not an integer"));
            };
            if schema["format"] == "int32" && i32::try_from(n).is_err() {
                return fail(format!("{n} is not an int32"));
            }
            if let Some(min) = schema["minimum"].as_i64()
                && n < min
            {
                return fail(format!("{n} is below {min}"));
            }
        }
        Some("number") if !v.is_number() => return fail(format!("{v} is not a number")),
        Some("boolean") if !v.is_boolean() => return fail(format!("{v} is not a boolean")),
        Some("number" | "boolean") => {}
        Some(other) => return fail(format!("schema type {other} is not supported here")),
        None => {}
    }
    Ok(())
}

#[test]
fn the_validator_refuses_what_the_schema_refuses() {
    let ok = serde_json::json!({
        "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
        "metadata": {"name": "x"},
        "spec": {"operatingMode": "Suspended", "podTemplate": {"spec": {"containers": [{"name": "c"}]}}},
    });
    validate(&ok).unwrap();
    let mut bad = ok.clone();
    bad["spec"]["operatingMode"] = "Paused".into();
    assert!(validate(&bad).unwrap_err().contains("is not one of"));
    let mut bad = ok.clone();
    bad["spec"]["podTemplate"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always".into();
    assert!(validate(&bad).unwrap_err().contains("unknown field"));
    let mut bad = ok.clone();
    bad["spec"].as_object_mut().unwrap().remove("podTemplate");
    assert!(validate(&bad).unwrap_err().contains("required field"));
    let mut bad = ok;
    bad["spec"]["podTemplate"]["spec"]["containers"][0]["resources"] =
        serde_json::json!({"limits": {"memory": "lots"}});
    assert!(
        validate(&bad).unwrap_err().contains("does not match"),
        "{:?}",
        validate(&bad)
    );
    let template = serde_json::json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
        "metadata": {"name": "x"},
        "spec": {"networkPolicyManagement": "Off", "podTemplate": {"spec": {"containers": [{"name": "c"}]}}},
    });
    assert!(
        validate(&template)
            .unwrap_err()
            .contains("networkPolicyManagement")
    );
}
