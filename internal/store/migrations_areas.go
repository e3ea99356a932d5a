package store

// Area migration lists not yet populated live here until their area lands;
// each area moves its list into its own migrations_<area>.go.
