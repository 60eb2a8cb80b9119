package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// SchemaID is where the published JSON Schema of the configuration file
// lives (rules/countersign.schema.json in the repository).
const SchemaID = "https://raw.githubusercontent.com/countersign/countersign/main/rules/countersign.schema.json"

// ConfigSchema returns the JSON Schema (draft 2020-12) of
// .github/countersign.yml, generated from Config: its keys and types from
// the struct's yaml tags, descriptions from its doc tags, defaults from
// DefaultConfig, and allowed values from the lists and patterns ParseConfig
// checks against. What a schema cannot say (valid glob syntax, an agent
// listed twice with different pilots, a YAML tag, the size limits) only
// ParseConfig checks: a file the schema accepts may still be refused, never
// the other way round.
func ConfigSchema() []byte {
	root := objectSchema("", reflect.TypeOf(Config{}), reflect.ValueOf(DefaultConfig()))
	root["type"] = "object" // the file itself is a mapping
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = ConfigPath
	root["description"] = "countersign's per-repository configuration (docs/configuration.md). Every key is optional; a key given replaces its default as a whole, null keeps it."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		panic(fmt.Sprintf("encode the configuration's schema: %v", err)) // only maps, slices, strings and numbers
	}
	return b.Bytes()
}

// Patterns of the schema, built from the parser's own.
var (
	personPattern       = `^@?` + loginPattern + `(\[bot\])?$` // a login, a bot account, "@" allowed
	personOrTeamPattern = `^(@?` + loginPattern + `(\[bot\])?|` + teamPattern + `)$`
	notBlank            = `\S`
)

// objectSchema describes struct type t at path (dotted keys), def holding
// its defaults.
func objectSchema(path string, t reflect.Type, def reflect.Value) map[string]any {
	props := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		p := join(path, key)
		var fd reflect.Value // inside lists and maps: no default
		if def.IsValid() {
			fd = def.Field(i)
		}
		s := valueSchema(p, f.Type, fd)
		if d := f.Tag.Get("doc"); d != "" {
			s["description"] = d
		}
		if p != "contracts.rules[].files" {
			nullable(s) // null keeps the default
		}
		props[key] = s
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	switch path {
	case "tasks":
		s["if"] = map[string]any{"properties": map[string]any{"track": map[string]any{"const": "labeled"}}, "required": []string{"track"}}
		s["then"] = map[string]any{"properties": map[string]any{"label": map[string]any{"type": "string", "pattern": notBlank}}}
	case "contracts.rules[]":
		s["required"] = []string{"files"}
		s["anyOf"] = []any{ // it must ask for something
			map[string]any{"properties": map[string]any{"unit-test": map[string]any{"const": true}}, "required": []string{"unit-test"}},
			map[string]any{"properties": map[string]any{"e2e": map[string]any{"enum": e2eTimings[1:]}}, "required": []string{"e2e"}},
			map[string]any{"properties": map[string]any{"critics": map[string]any{"type": "array", "minItems": 1}}, "required": []string{"critics"}},
		}
	}
	return s
}

// valueSchema describes a value of type t at path; def is its default (the
// zero Value inside lists and maps).
func valueSchema(path string, t reflect.Type, def reflect.Value) map[string]any {
	var s map[string]any
	switch t.Kind() {
	case reflect.Struct:
		return objectSchema(path, t, def)
	case reflect.String:
		// YAML reads 2024, 1.5 and true as text where text is expected, and
		// so does the parser: the schema must not refuse them.
		s = map[string]any{"type": []string{"string", "number", "boolean"}}
	case reflect.Int:
		r, ok := countRanges[path]
		if !ok {
			panic(fmt.Sprintf("configuration schema: no range for the count %s (countRanges)", path))
		}
		s = map[string]any{"type": "integer", "minimum": r.min, "maximum": r.max}
	case reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case reflect.Slice:
		s = map[string]any{"type": "array", "items": valueSchema(path+"[]", t.Elem(), reflect.Value{})}
	case reflect.Map:
		vs := valueSchema(path+".*", t.Elem(), reflect.Value{})
		if t.Elem().Kind() == reflect.Slice && path != "contracts.checks" {
			nullable(vs) // a null list is an empty one (but an activity's checks are written out: [] to leave it to the verifier)
		}
		s = map[string]any{"type": "object", "additionalProperties": vs}
	default:
		panic(fmt.Sprintf("configuration schema: no JSON type for %s (%s)", path, t))
	}
	for k, v := range constraints(path) {
		s[k] = v
	}
	if def.IsValid() && !def.IsZero() && (def.Kind() != reflect.Slice && def.Kind() != reflect.Map || def.Len() > 0) {
		s["default"] = def.Interface()
	}
	return s
}

// constraints are what the parser checks of the value at path, beyond its
// type.
func constraints(path string) map[string]any {
	switch path {
	case "separation":
		return map[string]any{"enum": separations}
	case "tasks.track":
		return map[string]any{"enum": trackModes}
	case "leads[]", "verifiers[]", "contracts.critics.*[]":
		return map[string]any{"pattern": personOrTeamPattern}
	case "agents":
		return map[string]any{"propertyNames": map[string]any{"pattern": personPattern}}
	case "agents.*":
		return map[string]any{"pattern": `^@?` + loginPattern + `$`}
	case "contracts.checks":
		return map[string]any{"propertyNames": map[string]any{"enum": CheckedActivities}}
	case "contracts.apps":
		return map[string]any{"propertyNames": map[string]any{"pattern": notBlank}}
	case "contracts.apps.*":
		return map[string]any{"pattern": `^` + slugPattern + `$`}
	case "gate.untracked":
		return map[string]any{"enum": untrackedModes}
	case "board.project":
		return map[string]any{"pattern": boardProjectPattern}
	case "board.field":
		return map[string]any{"pattern": notBlank, "maxLength": maxBoardField}
	case "contracts.status_creators[]", "gate.exempt[]":
		return map[string]any{"pattern": personPattern}
	case "contracts.critics":
		return map[string]any{"propertyNames": map[string]any{"pattern": `^` + criticPattern + `$`}}
	case "contracts.rules[].critics[]":
		return map[string]any{"pattern": `^` + criticPattern + `$`}
	case "contracts.rules[].files":
		return map[string]any{"minItems": 1}
	case "contracts.rules[].files[]": // relative (no leading / or ./), not blank
		return map[string]any{"pattern": `^([^/.]|\.([^/]|$))`, "allOf": []any{map[string]any{"pattern": notBlank}}}
	case "contracts.rules[].e2e":
		return map[string]any{"enum": e2eTimings}
	case "tasks.ignore_labels[]", "contracts.checks.*[]", "contracts.contradictions[]", "contracts.advisory[]", "contracts.skip[]":
		return map[string]any{"pattern": notBlank}
	}
	return nil
}

// nullable lets the value described by s be null too.
func nullable(s map[string]any) {
	switch t := s["type"].(type) {
	case string:
		s["type"] = []string{t, "null"}
	case []string:
		s["type"] = append(t, "null")
	}
	if e, ok := s["enum"]; ok {
		v := reflect.ValueOf(e)
		out := make([]any, 0, v.Len()+1)
		for i := 0; i < v.Len(); i++ {
			out = append(out, v.Index(i).Interface())
		}
		s["enum"] = append(out, nil)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
