// Only the JNI entry points leave the library: a version script hides every other symbol,
// librdkafka's included, so nothing clashes with other native code in the JVM.
fn main() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("exports.map");
    println!("cargo:rerun-if-changed={}", script.display());
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        script.display()
    );
}
