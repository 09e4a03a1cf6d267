package sns

import (
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// TestMessageAttributesAreDocumented: the attributes the publisher sets on a
// message are exactly the headers the AsyncAPI document gives every message
// (api's tests hold each message to components.schemas.MessageAttributes),
// each a String, as the document's string properties say.
func TestMessageAttributesAreDocumented(t *testing.T) {
	b, err := api.Events.ReadFile(api.AsyncAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string `yaml:"required"`
				Properties map[string]struct {
					Type string `yaml:"type"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	headers, ok := doc.Components.Schemas["MessageAttributes"]
	if !ok {
		t.Fatalf("%s has no components.schemas.MessageAttributes", api.AsyncAPIFile)
	}
	// A message written by a traced request carries every attribute; one
	// written without a trace context, only those every message carries:
	// its id and type, and the signature the payments service always
	// publishes it with (cmd/payments signs through provenance.Publisher).
	sig := provenance.Signature{KeyID: "k1", Value: "v1a,c2lnbmF0dXJl"}
	attrs := messageAttributes(outbox.Message{ID: uuid.New(), Type: "payment.created",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TraceState: "vendor=x"}, sig)
	set := slices.Sorted(maps.Keys(attrs))
	if documented := slices.Sorted(maps.Keys(headers.Properties)); !slices.Equal(set, documented) {
		t.Errorf("the publisher sets the attributes %v; %s documents %v", set, api.AsyncAPIFile, documented)
	}
	always := slices.Sorted(maps.Keys(messageAttributes(outbox.Message{ID: uuid.New(), Type: "payment.created"}, sig)))
	if required := slices.Sorted(slices.Values(headers.Required)); !slices.Equal(always, required) {
		t.Errorf("the publisher sets %v on every message; %s requires %v", always, api.AsyncAPIFile, required)
	}
	for name, v := range attrs {
		if aws.ToString(v.DataType) != "String" || headers.Properties[name].Type != "string" {
			t.Errorf("attribute %s: data type %s, documented as %q; want String and string", name, aws.ToString(v.DataType), headers.Properties[name].Type)
		}
	}
}
