// Package eventschema checks events against the JSON Schemas they are
// published under, the files in api/events: the CloudEvents envelope's and
// each event type's data at each version. Each consuming service checks
// every event it receives with it (it implements inbox.Schemas), and the
// payments service's tests check every event it publishes: all read the
// same files, so the services share a contract, not Go code.
package eventschema

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// ErrNoSchema means no schema in api/events describes the data of an event's
// type at its version.
var ErrNoSchema = errors.New("no schema")

// Validator holds every schema of api/events, compiled. It is safe for
// concurrent use.
type Validator struct {
	envelope *jsonschema.Schema
	data     map[string]dataSchema // by $id
}

// dataSchema is the schema of one event type's data at one version.
type dataSchema struct {
	typ, version string
	schema       *jsonschema.Schema
}

var _ inbox.Schemas = (*Validator)(nil)

// New compiles the schemas embedded in package api. It fails only on a file
// that is not a valid JSON Schema, which the tests of package api rule out.
func New() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // uuid, date-time and uri are rules of the contract, not remarks
	// Every schema is registered under its $id before any is compiled, so a
	// reference between them never reaches for the network.
	var ids []string
	err := fs.WalkDir(api.Events, "events", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) != ".json" {
			return err
		}
		b, err := api.Events.ReadFile(name)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("api/%s: %w", name, err)
		}
		id := api.EventSchemaBase + strings.TrimPrefix(name, "events/")
		if err := c.AddResource(id, doc); err != nil {
			return fmt.Errorf("api/%s: %w", name, err)
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	v := &Validator{data: map[string]dataSchema{}}
	for _, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", id, err)
		}
		if id == api.EnvelopeSchemaID {
			v.envelope = s
			continue
		}
		typ, version, ok := parseID(id)
		if !ok {
			return nil, fmt.Errorf("%s: a data schema's file must be events/<type>/v<N>.json", id)
		}
		v.data[id] = dataSchema{typ: typ, version: version, schema: s}
	}
	if v.envelope == nil {
		return nil, fmt.Errorf("no envelope schema %s", api.EnvelopeSchemaID)
	}
	return v, nil
}

// Validate implements inbox.Schemas: event, a CloudEvents document of type
// typ whose data is at version, must match the envelope's schema; its data,
// the schema of typ at version; and its dataschema must be that schema's $id. Errors: ErrNoSchema, or one naming what breaks which
// schema.
func (v *Validator) Validate(typ, version string, event []byte) error {
	id := api.EventSchemaID(typ, version)
	ds, ok := v.data[id]
	if !ok {
		return fmt.Errorf("%w for %s data version %q", ErrNoSchema, typ, version)
	}
	doc, err := v.envelopeOf(event)
	if err != nil {
		return err
	}
	if got := doc["dataschema"]; got != id {
		return fmt.Errorf("dataschema %v is not the schema of %s data version %s, %s", got, typ, version, id)
	}
	return validate(ds.schema, doc["data"], "/data")
}

// Check validates a published event on its own terms: it must name the schema
// of its data in dataschema, a schema of its type, and match it and the
// envelope's. The producer's tests check every event they publish with it.
func (v *Validator) Check(event []byte) error {
	doc, err := v.envelopeOf(event)
	if err != nil {
		return err
	}
	id, _ := doc["dataschema"].(string)
	if id == "" {
		return errors.New("the event has no dataschema")
	}
	ds, ok := v.data[id]
	if !ok {
		return fmt.Errorf("%w: dataschema %s names no file in api/events", ErrNoSchema, id)
	}
	if doc["type"] != ds.typ {
		return fmt.Errorf("an event of type %v names the schema of %s, %s", doc["type"], ds.typ, id)
	}
	return validate(ds.schema, doc["data"], "/data")
}

// envelopeOf parses event and validates it against the envelope's schema.
func (v *Validator) envelopeOf(event []byte) (map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := validate(v.envelope, doc, ""); err != nil {
		return nil, err
	}
	return doc.(map[string]any), nil // the envelope's schema requires an object
}

// validate reports what in doc, found at pointer in the event ("" for the
// event itself), breaks s, on one line: the error ends up in a log line.
func validate(s *jsonschema.Schema, doc any, pointer string) error {
	err := s.Validate(doc)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var causes []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error != nil && len(u.Errors) == 0 {
			at := cmp.Or(pointer+u.InstanceLocation, "/")
			causes = append(causes, fmt.Sprintf("at %s: %s", at, u.Error))
		}
	}
	what := "the event"
	if pointer != "" {
		what = pointer
	}
	return fmt.Errorf("%s does not match %s: %s", what, strings.TrimSuffix(s.Location, "#"), strings.Join(causes, "; "))
}

// parseID splits the $id of a data schema, EventSchemaBase +
// <type>/v<N>.json, into its type and version.
func parseID(id string) (typ, version string, ok bool) {
	rest, ok := strings.CutPrefix(id, api.EventSchemaBase)
	if !ok {
		return "", "", false
	}
	typ, file, ok := strings.Cut(rest, "/")
	if !ok || typ == "" || strings.Contains(file, "/") {
		return "", "", false
	}
	version, ok = strings.CutSuffix(strings.TrimPrefix(file, "v"), ".json")
	if !ok || !strings.HasPrefix(file, "v") || version == "" || strings.Trim(version, "0123456789") != "" || version[0] == '0' {
		return "", "", false
	}
	return typ, version, true
}
