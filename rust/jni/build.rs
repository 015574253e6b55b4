// Only the JNI entry points leave the library: a version script hides every other symbol
// (aws-lc's C symbols included), so nothing clashes with other native code in the JVM.
// packaging/native/audit_elf.py checks the shipped libraries for exactly that.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = dir.join("exports.map");
    println!("cargo:rerun-if-changed={}", script.display());
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        script.display()
    );
    // The linker-made section bounds, which a version script does not hide: hidden by a
    // reference of hidden visibility (see section_bounds.c), linked as an object so that it is
    // always part of the link.
    let bounds = dir.join("section_bounds.c");
    println!("cargo:rerun-if-changed={}", bounds.display());
    let objects = cc::Build::new()
        .file(&bounds)
        .warnings(true)
        .compile_intermediates();
    for object in objects {
        println!("cargo:rustc-cdylib-link-arg={}", object.display());
    }
}
