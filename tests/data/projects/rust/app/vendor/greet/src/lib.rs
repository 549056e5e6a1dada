/// Greet `name`.
pub fn hello(name: &str) -> String {
    format!("hello, {name}")
}
