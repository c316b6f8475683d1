//go:build race

package svn

// raceEnabled: the race detector's shadow memory raises every process's
// RSS, so memory bounds measured in a child are scaled for it.
const raceEnabled = true
