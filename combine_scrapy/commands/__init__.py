"""Project commands (COMMANDS_MODULE): what Combine's combineCtrl, combineUtil and combineExport did."""
