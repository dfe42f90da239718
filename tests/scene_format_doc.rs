//! Every TOML example of docs/scene-format.md parses as a scene (examples without a camera
//! get the first example's camera and film), and the tables and keys the document lists are
//! the ones the loader accepts: a key it does not list is an error.

mod common;

use common::repo_path;
use wavetrace::scene::Scene;

/// The ```toml blocks of the document, in order.
fn examples() -> Vec<String> {
    let text = std::fs::read_to_string(repo_path("docs/scene-format.md")).expect("doc");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```toml block");
    blocks
}

fn parse(text: &str) -> wavetrace::Result<Scene> {
    Scene::from_toml_str(text, repo_path("scenes/grove/example.toml"))
}

#[test]
fn every_example_parses() {
    let blocks = examples();
    assert!(blocks.len() >= 6, "{} examples", blocks.len());
    let header: String = blocks[0]
        .split("[[mesh]]")
        .next()
        .expect("a first example")
        .to_string();
    for (i, block) in blocks.iter().enumerate() {
        let text = if block.contains("[camera]") {
            block.clone()
        } else {
            // A scene needs geometry: examples of other tables get the first one's mesh.
            let mesh = if block.contains("[[mesh]]")
                || block.contains("[[blas]]")
                || block.contains("[[spheres]]")
            {
                ""
            } else {
                "[[mesh]]\nobj = \"rock.obj\"\n"
            };
            format!("{header}\n{mesh}{block}")
        };
        if let Err(e) = parse(&text) {
            panic!("example {i} does not parse: {e}\n{text}");
        }
    }
}

/// The examples mean what the document says: the instance example's matrix, mask, id and
/// flags, the placement example's baked transform, the two-level numbering.
#[test]
fn examples_mean_what_the_tables_say() {
    let blocks = examples();
    let header = blocks[0].split("[[mesh]]").next().unwrap().to_string();
    let instance = blocks
        .iter()
        .find(|b| b.contains("id = 0xABCDEF"))
        .expect("the instance example");
    let scene = parse(&format!("{header}\n{instance}")).unwrap();
    assert_eq!(scene.instances.len(), 1);
    let i = &scene.instances[0];
    assert_eq!(i.object_to_world[0], [-1.0, 0.0, 0.0, 4.0]);
    assert_eq!(i.object_to_world[1], [0.0, 1.5, 0.0, 0.0]);
    assert_eq!(i.mask, 0x0F);
    assert_eq!(i.id, 0xABCDEF);
    assert!(i.is_mirrored());
    assert!(i
        .flags
        .contains(wavetrace::hw::InstanceFlags::TRIANGLE_CULL_DISABLE));
    assert!(i.flags.contains(wavetrace::hw::InstanceFlags::FORCE_OPAQUE));
    // A [[mesh]] beside instances is a BLAS with an identity instance, numbered first.
    let mixed = parse(&format!(
        "{header}\n[[mesh]]\nobj = \"rock.obj\"\n{instance}"
    ))
    .unwrap();
    assert_eq!(mixed.instances.len(), 2);
    assert_eq!(
        mixed.blases[mixed.instances[0].blas as usize].name,
        "mesh[0]"
    );
    assert_eq!(
        mixed.instances[0].id, 0,
        "the default id is the instance's index"
    );
    assert_eq!(mixed.instances[1].id, 0xABCDEF);
}

/// Keys the document does not list are refused, with their name in the message.
#[test]
fn an_unlisted_key_is_an_error_naming_it() {
    let blocks = examples();
    let header = blocks[0].split("[[mesh]]").next().unwrap().to_string();
    for (table, extra) in [
        ("[[mesh]]\nobj = \"rock.obj\"\n", "rotate_x_deg = 3.0\n"),
        (
            "[[blas]]\nname = \"r\"\nobj = \"rock.obj\"\n[[instance]]\nblas = \"r\"\n",
            "matrix = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]\n",
        ),
    ] {
        let text = format!("{header}\n{table}{extra}");
        let key = extra.split(" =").next().unwrap();
        let err = parse(&text).expect_err("unknown key").to_string();
        assert!(err.contains(key), "{err}");
    }
}
