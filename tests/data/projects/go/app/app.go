package app

import "example.com/greet"

// Greeting greets the world.
func Greeting() string { return greet.Hello("wrld") }
