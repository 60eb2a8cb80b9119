package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/countersign/countersign/app"
)

// settingValue is a setting's flag: its value as text (app.ResolveSettings
// reads it), checked as its type when given, and shown in the help as that
// type (int, float, duration), not as a string.
type settingValue struct {
	text *string
	typ  string
}

func (v *settingValue) String() string { return *v.text }

func (v *settingValue) Type() string { return v.typ }

func (v *settingValue) Set(s string) error {
	t := strings.TrimSpace(s)
	switch v.typ {
	case "int":
		if _, err := strconv.ParseInt(t, 10, 64); err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
	case "float":
		if _, err := strconv.ParseFloat(t, 64); err != nil {
			return fmt.Errorf("%q is not a number (e.g. 0.9)", s)
		}
	case "duration":
		if _, err := time.ParseDuration(t); err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 90s, 15m, 2h)", s)
		}
	}
	*v.text = s
	return nil
}

// addSettingFlags gives fs a flag for each setting of table that keep
// accepts (nil: all), each mirroring its environment variable, and returns
// their values by variable. The help shows the documented default, never a
// variable's value (some are secrets).
func addSettingFlags(fs *pflag.FlagSet, table []app.Setting, keep func(app.Setting) bool) map[string]*string {
	flags := make(map[string]*string, len(table))
	for _, s := range table {
		if keep != nil && !keep(s) {
			continue
		}
		text := s.Default
		flags[s.Env] = &text
		fs.Var(&settingValue{text: &text, typ: s.Type}, s.Flag, s.Help+" ["+s.Env+"]")
	}
	return flags
}
