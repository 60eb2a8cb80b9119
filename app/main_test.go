package app_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain lets up to 2*GOMAXPROCS parallel tests run at once, unless
// -parallel was given. Each end-to-end test spends much of its time waiting
// (on its bot's settling, timers and store, and the fake's webhooks): at
// GOMAXPROCS of them at a time (go test's default) an idle 2-core machine
// ran the package under -race in 286 s for about 150 s of CPU, two cores
// less than half busy. The tests that measure rates against real time stay
// serial (serialTests).
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	os.Exit(m.Run())
}
