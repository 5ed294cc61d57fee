/// The schema social owns.
let socialSchema = "social"
