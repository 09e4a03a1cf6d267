package paymentstore

// ListSQL is listSQL, for the test that explains its plans.
var ListSQL = listSQL
