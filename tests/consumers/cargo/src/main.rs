//! A user's binary depending on the offsetkeeper crate; consumers/run.sh resolves it.
fn main() {
    let none: Option<offsetkeeper::Error> = None;
    println!("{}", none.is_none());
}
