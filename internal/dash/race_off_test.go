//go:build !race

package dash

const raceEnabled = false
