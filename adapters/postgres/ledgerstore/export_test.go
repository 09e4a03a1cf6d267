package ledgerstore

// EntriesSQL is entriesSQL, for the test that explains its plans.
var EntriesSQL = entriesSQL
