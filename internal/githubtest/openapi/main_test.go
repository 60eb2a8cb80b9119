package openapi_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain lets up to 4*GOMAXPROCS parallel tests run at once, unless
// -parallel was given: TestWorkloadConforms' scenario replays spend most of their time
// waiting (on their bot's settling, the fake's webhooks, the store), so
// GOMAXPROCS of them at a time (go test's default) leaves the CPU idle.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
	os.Exit(m.Run())
}
