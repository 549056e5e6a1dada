package app

import "testing"

func TestGreeting(t *testing.T) {
	if got := Greeting(); got != "hello, world" {
		t.Fatalf("Greeting() = %q, want %q", got, "hello, world")
	}
}
