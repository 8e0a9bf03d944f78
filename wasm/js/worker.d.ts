// `microquant/worker` has no exports: importing it makes the worker answer calibration jobs.
export {};
