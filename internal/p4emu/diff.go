package p4emu

import (
	"fmt"
	"strings"
)

// unifiedHunks diffs a against b (lines with their newlines) and returns
// the hunks in the form `p4 describe -du` prints them: "@@ -l,n +l,n @@"
// headers and " ", "-", "+" lines, three lines of context, no ---/+++
// file headers (see the fixtures' README).
func unifiedHunks(a, b []string) string {
	ops := lcsOps(a, b)
	const ctx = 3
	var out strings.Builder
	i := 0
	for i < len(ops) {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := i - ctx
		if start < 0 {
			start = 0
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end += ctx
				if end > len(ops) {
					end = len(ops)
				}
				break
			}
			end = run
		}
		oldStart, newStart := ops[start].a+1, ops[start].b+1
		var oldN, newN int
		var body strings.Builder
		for _, op := range ops[start:end] {
			line := op.text
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			switch op.kind {
			case ' ':
				oldN++
				newN++
			case '-':
				oldN++
			case '+':
				newN++
			}
			body.WriteByte(op.kind)
			body.WriteString(line)
		}
		if oldN == 0 {
			oldStart--
		}
		if newN == 0 {
			newStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", oldStart, oldN, newStart, newN)
		out.WriteString(body.String())
		i = end
	}
	return out.String()
}

type op struct {
	kind byte
	text string
	a, b int // line index in a and b where the op sits
}

func lcsOps(a, b []string) []op {
	n, m := len(a), len(b)
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else if l[i+1][j] >= l[i][j+1] {
				l[i][j] = l[i+1][j]
			} else {
				l[i][j] = l[i][j+1]
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i++
			j++
		case j < m && (i == n || l[i][j+1] >= l[i+1][j]):
			ops = append(ops, op{'+', b[j], i, j})
			j++
		default:
			ops = append(ops, op{'-', a[i], i, j})
			i++
		}
	}
	return ops
}
