/// The schema tracking owns.
let trackingSchema = "tracking"
