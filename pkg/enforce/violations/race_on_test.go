//go:build race

package violations_test

// raceEnabled: the race detector slows the decision path about tenfold.
const raceEnabled = true
