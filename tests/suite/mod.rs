mod budgets;
mod end_to_end;
mod model_faults;
mod report_schema;
mod spec_errors;
