package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a string ("30s", "1m30s", "250ms")
// or as a number of seconds (30, 0.25).
type Duration time.Duration

// String returns the duration as time.Duration formats it ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// maxSeconds bounds durations written as numbers, so they fit a
// time.Duration.
const maxSeconds = float64(1<<62) / float64(time.Second)

// UnmarshalJSON accepts "1m30s" or 90 (seconds). A wrong value is reported
// as a *json.UnmarshalTypeError, so encoding/json names the field; the error
// names the value's kind, not the value.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if err := d.parse(s); err != nil {
			return &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[Duration]()}
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Duration]()}
	}
	if err := d.seconds(f); err != nil {
		return &json.UnmarshalTypeError{Value: "number", Type: reflect.TypeFor[Duration]()}
	}
	return nil
}

// jsonKind names the kind of the JSON value b, as encoding/json's errors
// do ("object", "array", "bool", "number"), without repeating it: the value
// may be a secret typed into the wrong field.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "value"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}

// MarshalJSON writes the duration as a string ("1m30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalYAML accepts "1m30s" or 90 (seconds). A wrong value is reported
// as a *yaml.TypeError, so decoding goes on and every problem is reported.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	bad := func(got string) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d column %d: want %s, got %s",
			n.Line, n.Column, want(reflect.TypeFor[Duration]()), got)}}
	}
	if n.Kind != yaml.ScalarNode {
		if n.Kind == yaml.MappingNode {
			return bad("a mapping")
		}
		return bad("a list")
	}
	switch tag := n.ShortTag(); tag {
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || d.seconds(f) != nil {
			return bad(gotYAML(tag, n.Value) + " (out of range)")
		}
		return nil
	case "!!str":
		if d.parse(n.Value) != nil {
			return bad(gotYAML(tag, n.Value))
		}
		return nil
	default:
		return bad(gotYAML(tag, n.Value))
	}
}

// MarshalYAML writes the duration as a string ("1m30s"), so that a marshaled
// File parses back to the same value.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d *Duration) seconds(f float64) error {
	if math.IsNaN(f) || f > maxSeconds || f < -maxSeconds {
		return fmt.Errorf("%v seconds is out of range", f)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}
