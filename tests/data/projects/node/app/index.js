const greet = require("hone-fixture-greet");

module.exports = () => greet("wrld");
