// Command probe is the test program run inside the sandbox by the tests:
// one verb per behaviour the sandbox must allow or stop.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe verb [args]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "env":
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
	case "write": // write PATH CONTENT
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write failed:", err)
			os.Exit(3)
		}
	case "cat":
		b, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "read failed:", err)
			os.Exit(3)
		}
		os.Stdout.Write(b)
	case "sleep":
		d, _ := time.ParseDuration(os.Args[2])
		time.Sleep(d)
	case "alloc": // alloc MiB: touch every page so it is really resident
		n, _ := strconv.Atoi(os.Args[2])
		var keep [][]byte
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep), "MiB")
	case "forkbomb": // forkbomb N: start N sleeping children
		n, _ := strconv.Atoi(os.Args[2])
		for i := 0; i < n; i++ {
			cmd := exec.Command(os.Args[0], "sleep", "30s")
			if err := cmd.Start(); err != nil {
				fmt.Println("fork refused after", i, "children:", err)
				os.Exit(4)
			}
		}
		fmt.Println("started", n, "children")
	case "spew": // spew N bytes to stdout
		n, _ := strconv.Atoi(os.Args[2])
		line := make([]byte, 1024)
		for i := range line {
			line[i] = 'x'
		}
		for n > 0 {
			k := min(n, len(line))
			os.Stdout.Write(line[:k])
			n -= k
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown verb", os.Args[1])
		os.Exit(2)
	}
}
