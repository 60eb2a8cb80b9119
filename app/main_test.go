package app_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain lets up to 4*GOMAXPROCS parallel tests run at once, unless
// -parallel was given. Each end-to-end test spends much of its time waiting
// (on its bot's settling, timers and store, and the fake's webhooks): on a
// quiet 2-core machine, under -race, the package took 171 s at 2 per CPU
// (one core busy on average) and 119 s at 4 per CPU, for the same CPU. The
// tests that measure rates against real time stay serial (serialTests).
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
	os.Exit(m.Run())
}
