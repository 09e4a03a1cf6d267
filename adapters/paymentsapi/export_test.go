package paymentsapi

import (
	"reflect"
	"strings"
)

// ResponseFields returns the JSON names of every field of a payment's answer
// and of its refund's, read from the response types by reflection: what the
// replay test requires a retry to give back.
func ResponseFields() (payment, refund []string) {
	return jsonNames(reflect.TypeFor[paymentResponse]()), jsonNames(reflect.TypeFor[refundResponse]())
}

func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = t.Field(i).Name
		}
		names = append(names, name)
	}
	return names
}
