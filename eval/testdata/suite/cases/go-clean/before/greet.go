package greet

func Hello() string { return "hello" }
