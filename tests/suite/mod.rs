mod budgets;
mod end_to_end;
mod model_faults;
mod policy;
mod report_schema;
mod safety;
mod spec_errors;
