//go:build !race

package svn

const raceEnabled = false
