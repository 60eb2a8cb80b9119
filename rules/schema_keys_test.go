package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// keyPaths lists the dotted keys a struct type reads from YAML.
func keyPaths(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		key := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		*out = append(*out, prefix+key)
		keyPaths(t.Field(i).Type, prefix+key+".", out)
	}
}

// TestSchemaKeysAreTheParsersKeys: the keys the schema is generated from
// (Config's) are exactly those the strict parser accepts (rawConfig's).
func TestSchemaKeysAreTheParsersKeys(t *testing.T) {
	var cfg, raw []string
	keyPaths(reflect.TypeOf(Config{}), "", &cfg)
	keyPaths(reflect.TypeOf(rawConfig{}), "", &raw)
	slices.Sort(cfg)
	slices.Sort(raw)
	if !slices.Equal(cfg, raw) || len(cfg) < 20 {
		t.Fatalf("Config's keys %v\nrawConfig's keys %v", cfg, raw)
	}
}
