//go:build race

package dash

const raceEnabled = true
