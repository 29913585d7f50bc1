"""One module per transform family; each holds the public function, its validation and its CPU
implementation."""
