// The registry's search, in the browser (docs/web.md): reads search.json
// and the shards it names, once, and ranks the skills against the words
// typed. Results are written with textContent, never as HTML: names and
// descriptions are the publishers' text.
"use strict";
(function () {
  var form = document.getElementById("search");
  var input = document.getElementById("q");
  var status = document.getElementById("status");
  var results = document.getElementById("results");
  var LIMIT = 50;
  var loading = null;

  // Every skill of the search index: search.json lists them (version 1)
  // or says how many shards do (version 2).
  function load() {
    if (loading) return loading;
    loading = getJson("search.json").then(function (root) {
      if (Array.isArray(root.skills)) return root.skills;
      var count = root.shards;
      var paths = [];
      if (count === 1) {
        paths.push("search/all.json");
      } else if (count === 16 || count === 256) {
        for (var i = 0; i < count; i++) {
          var hex = i.toString(16);
          if (count === 256 && hex.length < 2) hex = "0" + hex;
          paths.push("search/" + hex + ".json");
        }
      } else {
        throw new Error("search.json names " + count + " shards");
      }
      return Promise.all(paths.map(getJson)).then(function (shards) {
        var skills = [];
        shards.forEach(function (shard) {
          (shard.skills || []).forEach(function (skill) { skills.push(skill); });
        });
        return skills;
      });
    });
    loading.catch(function () { loading = null; });
    return loading;
  }

  function getJson(path) {
    return fetch(path, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(path + ": HTTP " + response.status);
      return response.json();
    });
  }

  // Higher is better; 0 leaves the skill out. Every word must be found.
  function score(skill, words) {
    var name = String(skill.name || "").toLowerCase();
    var text = String(skill.description || "").toLowerCase();
    var total = 0;
    for (var i = 0; i < words.length; i++) {
      var word = words[i];
      if (name === word) total += 100;
      else if (name.indexOf(word) === 0) total += 40;
      else if (name.indexOf(word) >= 0) total += 20;
      else if (text.indexOf(word) >= 0) total += 5;
      else return 0;
    }
    return total;
  }

  function show(query) {
    var words = query.toLowerCase().split(/\s+/).filter(Boolean);
    status.textContent = "Loading the index…";
    load().then(function (skills) {
      var found;
      if (words.length === 0) {
        found = skills.slice().sort(function (a, b) {
          return (b.downloads || 0) - (a.downloads || 0) || compare(a.name, b.name);
        });
      } else {
        found = skills
          .map(function (skill) { return { skill: skill, score: score(skill, words) }; })
          .filter(function (hit) { return hit.score > 0; })
          .sort(function (a, b) {
            return b.score - a.score ||
              (b.skill.downloads || 0) - (a.skill.downloads || 0) ||
              compare(a.skill.name, b.skill.name);
          })
          .map(function (hit) { return hit.skill; });
      }
      render(found.slice(0, LIMIT));
      var count = found.length;
      var noun = count === 1 ? " skill" : " skills";
      if (words.length === 0) {
        status.textContent = count + noun + " in this registry" +
          (count > LIMIT ? ", the " + LIMIT + " most downloaded shown" : "") + ".";
      } else {
        status.textContent = count + noun + " match \u201c" + query.trim() + "\u201d" +
          (count > LIMIT ? ", the best " + LIMIT + " shown" : "") + ".";
      }
    }).catch(function (error) {
      results.textContent = "";
      status.textContent = "The search index cannot be read: " + error.message;
    });
  }

  function compare(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function render(skills) {
    results.textContent = "";
    skills.forEach(function (skill) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = "skills/" + encodeURIComponent(skill.name) + ".html";
      link.textContent = skill.name;
      item.appendChild(link);
      item.appendChild(document.createTextNode(" "));
      var version = document.createElement("span");
      version.className = "version";
      version.textContent = skill.version;
      item.appendChild(version);
      if (skill.downloads) {
        var downloads = document.createElement("span");
        downloads.className = "downloads";
        downloads.textContent = " \u00b7 " + skill.downloads +
          (skill.downloads === 1 ? " download" : " downloads");
        item.appendChild(downloads);
      }
      var description = document.createElement("p");
      description.textContent = skill.description;
      item.appendChild(description);
      results.appendChild(item);
    });
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { show(input.value); }, 150);
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var url = new URL(window.location.href);
    if (input.value.trim()) url.searchParams.set("q", input.value.trim());
    else url.searchParams.delete("q");
    window.history.replaceState(null, "", url);
    show(input.value);
  });
  var initial = new URL(window.location.href).searchParams.get("q") || "";
  input.value = initial;
  show(initial);
})();
