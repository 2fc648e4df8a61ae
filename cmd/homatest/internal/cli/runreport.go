package cli

// reportFile is the report page every run folder gets (report/html).
const reportFile = "report.html"
