package copygrowth

// AsyncInvoke is asyncInvoke, for the test that compares its request with
// the SDK's.
var AsyncInvoke = asyncInvoke
