/// The greeting.
pub fn greeting() -> String {
    greet::hello("wrld")
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets_the_world() {
        assert_eq!(super::greeting(), "hello, world");
    }
}
