"""What generated sites say: one vocabulary per site type, in the register of ColBench's targets.

Texts are short on purpose: a simulated person has to be able to tell an agent every title and
paragraph of a page within ColBench's budget (10 turns, replies of at most 1,000 characters).
Each entry is whitespace-normalised plain text (the page reader collapses whitespace).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Site:
    kind: str  # what the description calls the site: "Healthcare Provider"
    names: tuple[str, ...]  # brand names for the header title
    taglines: tuple[str, ...]
    nav: tuple[str, ...]  # menu entries; "Home" is added first
    heroes: tuple[tuple[str, str], ...]  # (title, paragraph) of the banner
    topics: tuple[tuple[str, str], ...]  # (title, paragraph) of text sections and columns
    cards_titles: tuple[str, ...]  # titles of the cards section
    cards: tuple[tuple[str, str], ...]  # (title, short text) of a card
    cards_noun: str  # what the cards show, for the description: "services"
    buttons: tuple[str, ...]
    ctas: tuple[tuple[str, str], ...]  # (title, paragraph) of the call-to-action
    footer_links: tuple[str, ...]


SITES = (
    Site(
        kind="Healthcare Provider",
        names=("Green Valley Clinic", "Riverside Health", "CarePoint Medical", "Maple Family Practice"),
        taglines=("Caring for your family since 1985", "Health care close to home", "Your health, our priority"),
        nav=("Services", "Doctors", "Appointments", "Insurance", "Patient Portal", "Contact"),
        heroes=(
            ("Compassionate care for every age", "Our doctors and nurses are here for you and your family."),
            ("Feel better, sooner", "Same-day visits and friendly staff at three locations."),
            ("Modern medicine, personal care", "We take the time to listen before we treat."),
        ),
        topics=(
            ("Patient Information", "Bring your insurance card and a list of your medicines to every visit."),
            ("Our Services", "Primary care, pediatrics, lab tests and vaccinations under one roof."),
            ("Insurance", "We accept most major plans and help you understand your coverage."),
            ("Our Doctors", "Board-certified physicians with decades of experience."),
            ("Visiting Hours", "Open Monday to Saturday from 8 am to 7 pm."),
        ),
        cards_titles=("Our Services", "What We Treat", "Departments"),
        cards=(
            ("Family Medicine", "Checkups and care for all ages."),
            ("Pediatrics", "Gentle care for little ones."),
            ("Cardiology", "Keep your heart healthy."),
            ("Lab Tests", "Results within a day."),
            ("Vaccinations", "Flu shots and travel vaccines."),
            ("Physical Therapy", "Recover with expert help."),
        ),
        cards_noun="services",
        buttons=("Book an Appointment", "Find a Doctor", "Call Us Today"),
        ctas=(
            ("Need to see a doctor?", "Book your visit online in under a minute."),
            ("New patients welcome", "Register today and meet your doctor this week."),
        ),
        footer_links=("Appointment Scheduling", "Payment Processing", "Privacy Policy", "Careers"),
    ),
    Site(
        kind="Bakery",
        names=("Golden Crust Bakery", "Sweet Rise", "The Flour Mill", "Little Oven"),
        taglines=("Baked fresh every morning", "Bread, cakes and coffee", "Family recipes since 1962"),
        nav=("Menu", "Cakes", "Order Online", "Our Story", "Visit Us"),
        heroes=(
            ("Fresh bread every morning", "Sourdough, rye and baguettes out of the oven by 7 am."),
            ("Cakes for every celebration", "Custom cakes made with real butter and seasonal fruit."),
            ("Your neighborhood bakery", "Stop by for a warm croissant and a cup of coffee."),
        ),
        topics=(
            ("Our Story", "Three generations of bakers sharing the recipes we grew up with."),
            ("Daily Specials", "Cinnamon rolls on Mondays and lemon tarts every Friday."),
            ("Catering", "Trays of pastries and sandwiches for your next event."),
            ("Ingredients", "Local flour, free-range eggs and no preservatives."),
            ("Opening Hours", "Every day from 6 am to 6 pm, Sundays until noon."),
        ),
        cards_titles=("Our Favorites", "Fresh Today", "From the Oven"),
        cards=(
            ("Sourdough", "A crisp crust and a soft crumb."),
            ("Croissants", "Flaky, buttery and golden."),
            ("Carrot Cake", "With cream cheese frosting."),
            ("Apple Pie", "Made with local apples."),
            ("Baguette", "Baked four times a day."),
            ("Macarons", "Twelve flavors to choose from."),
        ),
        cards_noun="baked goods",
        buttons=("Order a Cake", "See the Menu", "Visit Us"),
        ctas=(
            ("Planning a party?", "Order a custom cake three days ahead."),
            ("Get fresh bread delivered", "Subscribe and get a loaf at your door every week."),
        ),
        footer_links=("Catering", "Gift Cards", "Allergen Information", "Contact"),
    ),
    Site(
        kind="Law Firm",
        names=("Harper & Lane", "Stone Legal Group", "Whitfield Law", "Carter Associates"),
        taglines=("Trusted counsel since 1990", "Experienced attorneys on your side", "Justice, delivered"),
        nav=("Practice Areas", "Attorneys", "Case Results", "About", "Contact"),
        heroes=(
            ("Experienced legal counsel", "We fight for the rights of individuals and businesses."),
            ("Your case deserves attention", "Every client works directly with a senior partner."),
            ("Clear advice when it matters", "Talk to an attorney today about your situation."),
        ),
        topics=(
            ("Practice Areas", "Family law, business disputes, real estate and estate planning."),
            ("Our Approach", "We explain your options plainly and keep you informed."),
            ("Case Results", "Over 500 cases won for our clients in the last decade."),
            ("Free Consultation", "Your first meeting with us costs nothing."),
            ("Our Attorneys", "Twelve lawyers with experience in state and federal courts."),
        ),
        cards_titles=("Practice Areas", "How We Help", "Our Services"),
        cards=(
            ("Family Law", "Divorce, custody and support."),
            ("Business Law", "Contracts and disputes."),
            ("Estate Planning", "Wills and trusts."),
            ("Real Estate", "Closings and title issues."),
            ("Personal Injury", "Fair compensation for you."),
            ("Employment Law", "Workplace rights protected."),
        ),
        cards_noun="practice areas",
        buttons=("Schedule a Consultation", "Call Now", "Request More Info"),
        ctas=(
            ("Talk to a lawyer today", "Schedule a free consultation at a time that suits you."),
            ("Injured at work?", "Call us for a free review of your case."),
        ),
        footer_links=("Privacy Policy", "Disclaimer", "Careers", "Office Locations"),
    ),
    Site(
        kind="Travel Agency",
        names=("Wanderlust Travel", "Blue Horizon Tours", "Atlas Journeys", "Sunny Escapes"),
        taglines=("Your next adventure starts here", "Trips planned with care", "See the world with us"),
        nav=("Destinations", "Deals", "Tours", "Reviews", "Contact"),
        heroes=(
            ("Discover your next adventure", "Handpicked trips to over 80 countries."),
            ("Escape to the sun", "Beach holidays with flights and hotels included."),
            ("Travel made simple", "We plan every detail so you can enjoy the journey."),
        ),
        topics=(
            ("Featured Destinations", "Lisbon, Kyoto and Cape Town top our list this season."),
            ("Special Offers", "Save up to 30 percent on early bookings for summer."),
            ("Why Travel With Us", "Local guides, small groups and support around the clock."),
            ("Customer Reviews", "Rated 4.9 out of 5 by more than 2,000 travelers."),
            ("Travel Insurance", "Cover for cancellations, delays and lost luggage."),
        ),
        cards_titles=("Popular Destinations", "Top Deals", "Our Tours"),
        cards=(
            ("Paris", "Four nights from $899."),
            ("Bali", "Beaches and temples."),
            ("Iceland", "Glaciers and hot springs."),
            ("Peru", "Hike to Machu Picchu."),
            ("Greece", "Island hopping for a week."),
            ("Japan", "Cherry blossom season."),
        ),
        cards_noun="destinations",
        buttons=("Book Now", "Plan My Trip", "View Deals"),
        ctas=(
            ("Ready to pack your bags?", "Tell us where you want to go and we do the rest."),
            ("Get our best deals", "Sign up for weekly offers in your inbox."),
        ),
        footer_links=("Customer Reviews", "Travel Insurance", "Terms", "Contact Information"),
    ),
    Site(
        kind="Restaurant",
        names=("La Piazza", "The Olive Table", "Saffron House", "Harbor Grill"),
        taglines=("Fresh food, warm welcome", "Seasonal cooking since 2005", "Dinner by the water"),
        nav=("Menu", "Reservations", "Location", "Online Ordering", "Events"),
        heroes=(
            ("A taste of Italy", "Wood-fired pizza and handmade pasta every night."),
            ("Fresh from the market", "Our menu changes with what local farms bring us."),
            ("Dinner with a view", "Seafood and sunsets on our harbor terrace."),
        ),
        topics=(
            ("What We Cook", "Starters, mains and desserts made from scratch each day."),
            ("Location", "12 Harbor Street, right next to the old lighthouse."),
            ("Private Events", "Our upstairs room seats up to 40 guests."),
            ("Opening Hours", "Tuesday to Sunday from noon until 11 pm."),
            ("Our Chef", "Chef Marco trained in Naples before opening this kitchen."),
        ),
        cards_titles=("Chef's Specials", "On the Menu", "Popular Dishes"),
        cards=(
            ("Margherita Pizza", "Tomato, basil and mozzarella."),
            ("Seafood Risotto", "Prawns and clams."),
            ("Lasagna", "Our grandmother's recipe."),
            ("Grilled Salmon", "With lemon and herbs."),
            ("Tiramisu", "Made fresh every morning."),
            ("Caesar Salad", "Crisp and classic."),
        ),
        cards_noun="dishes",
        buttons=("Reserve a Table", "Order Online", "View Menu"),
        ctas=(
            ("Book your table", "Reservations open 30 days in advance."),
            ("Hungry at home?", "Order online for pickup or delivery."),
        ),
        footer_links=("Catering", "Customer Reviews", "Gift Cards", "Jobs"),
    ),
    Site(
        kind="Real Estate",
        names=("Keystone Realty", "Open Door Homes", "Summit Properties", "Brick & Beam"),
        taglines=("Find the home you love", "Local agents, real results", "Homes for every chapter"),
        nav=("Buy", "Sell", "Rent", "Listings", "Agents", "Contact"),
        heroes=(
            ("Find your dream home", "Browse over 1,200 homes for sale in the valley."),
            ("Sell with confidence", "Our agents sold 300 homes last year above asking price."),
            ("Home is where your story begins", "Search listings by town, price and size."),
        ),
        topics=(
            ("Featured Properties", "A lakeside cottage, a city loft and a family home with a garden."),
            ("Neighborhoods", "Guides to schools, parks and commutes in every area we serve."),
            ("Selling Your Home", "Free valuation and professional photos for every listing."),
            ("Mortgage Help", "Our partners find rates that fit your budget."),
            ("Community Information", "Local events, markets and news from our towns."),
        ),
        cards_titles=("Featured Listings", "New on the Market", "Homes for Sale"),
        cards=(
            ("Lakeside Cottage", "3 beds, $420,000."),
            ("City Loft", "2 beds, $380,000."),
            ("Family Home", "4 beds, $560,000."),
            ("Country House", "5 beds, $710,000."),
            ("Modern Condo", "1 bed, $250,000."),
            ("Townhouse", "3 beds, $465,000."),
        ),
        cards_noun="property listings",
        buttons=("Search Homes", "Get a Valuation", "Contact an Agent"),
        ctas=(
            ("Thinking of selling?", "Get a free valuation of your home in 24 hours."),
            ("Ready to move?", "Talk to an agent who knows your neighborhood."),
        ),
        footer_links=("Community Information", "Contact Forms", "Mortgage Calculator", "Privacy"),
    ),
    Site(
        kind="Software Company",
        names=("Brightline Software", "Nimbus Labs", "CodeCraft", "Vertex Systems"),
        taglines=("Software that just works", "Tools for modern teams", "Built for developers"),
        nav=("Products", "Pricing", "Docs", "Blog", "Support"),
        heroes=(
            ("Ship faster with less effort", "Automate your builds, tests and deployments."),
            ("All your projects in one place", "Plan, track and release with your whole team."),
            ("Software built for scale", "Trusted by over 5,000 companies worldwide."),
        ),
        topics=(
            ("Featured Software", "Our flagship planner helps teams hit every deadline."),
            ("Integrations", "Connect with the tools you already use in one click."),
            ("Security", "Your data is encrypted in transit and at rest."),
            ("Customer Testimonials", "Teams report saving ten hours a week on average."),
            ("Pricing", "Free for small teams, simple plans as you grow."),
        ),
        cards_titles=("Our Products", "Features", "Why Choose Us"),
        cards=(
            ("Task Planner", "Organize work in boards."),
            ("Build Server", "Fast builds in the cloud."),
            ("Analytics", "Insights at a glance."),
            ("Team Chat", "Talk without leaving work."),
            ("File Sync", "Your files everywhere."),
            ("API Access", "Build on our platform."),
        ),
        cards_noun="products",
        buttons=("Start Free Trial", "Request a Demo", "Learn More"),
        ctas=(
            ("Try it free for 30 days", "No credit card required, cancel any time."),
            ("See it in action", "Book a live demo with our product team."),
        ),
        footer_links=("Pricing", "Support", "Customer Testimonials", "Careers"),
    ),
    Site(
        kind="Fitness Studio",
        names=("Peak Performance Gym", "Core Studio", "Iron & Grace", "Pulse Fitness"),
        taglines=("Stronger every day", "Train with purpose", "Fitness for every body"),
        nav=("Classes", "Schedule", "Trainers", "Membership", "Contact"),
        heroes=(
            ("Get stronger every day", "Classes for every level, from yoga to boxing."),
            ("Your first week is free", "Try any class and meet our friendly trainers."),
            ("Train with the best", "Certified coaches and modern equipment."),
        ),
        topics=(
            ("Class Schedule", "Over 60 classes a week, from 6 am to 9 pm."),
            ("Personal Training", "One-on-one sessions built around your goals."),
            ("Membership", "Flexible monthly plans with no joining fee."),
            ("Our Trainers", "Coaches certified in strength, mobility and nutrition."),
            ("Nutrition", "Simple meal plans that fit your training."),
        ),
        cards_titles=("Our Classes", "Programs", "Ways to Train"),
        cards=(
            ("Yoga", "Stretch and breathe."),
            ("Spin", "High-energy cycling."),
            ("Boxing", "Build power and speed."),
            ("Pilates", "Strengthen your core."),
            ("HIIT", "Short and intense."),
            ("Strength", "Lift with good form."),
        ),
        cards_noun="classes",
        buttons=("Join Now", "Book a Class", "Start Free Week"),
        ctas=(
            ("Start your free week", "Sign up today and try every class for free."),
            ("Bring a friend", "Both of you get your second month half price."),
        ),
        footer_links=("Membership Terms", "Class Schedule", "Gift Cards", "Contact"),
    ),
    Site(
        kind="Nonprofit Organization",
        names=("Helping Hands", "Clean Rivers Trust", "Bright Futures", "Open Shelter"),
        taglines=("Together we make a difference", "Every gift counts", "Building stronger communities"),
        nav=("Our Mission", "Programs", "Volunteer", "Donate", "News"),
        heroes=(
            ("Together we can help", "Your support brings meals and shelter to families in need."),
            ("Protect our rivers", "Join 3,000 volunteers cleaning waterways every spring."),
            ("Every child deserves to learn", "We fund books and tutors for schools in need."),
        ),
        topics=(
            ("Our Mission", "We help families find food, shelter and work."),
            ("Programs", "After-school tutoring, a food bank and job training."),
            ("Volunteer", "Give a few hours a month and change a life."),
            ("Our Impact", "Last year we served 40,000 meals."),
            ("Partners", "Local businesses and schools stand with us."),
        ),
        cards_titles=("What We Do", "Our Programs", "Ways to Help"),
        cards=(
            ("Food Bank", "Meals for local families."),
            ("Tutoring", "Help with homework."),
            ("Shelter", "A safe place to sleep."),
            ("Job Training", "Skills for new careers."),
            ("Clean-ups", "Volunteer days each month."),
            ("Scholarships", "Support for students."),
        ),
        cards_noun="programs",
        buttons=("Donate Now", "Volunteer", "Join Us"),
        ctas=(
            ("Make a donation", "Every dollar goes straight to our programs."),
            ("Sign up for our newsletter", "Stories and news from our work, once a month."),
        ),
        footer_links=("Social Media", "Partnerships", "Annual Report", "Contact"),
    ),
    Site(
        kind="Educational Institution",
        names=("Northfield Academy", "Lakeside College", "Oakridge School", "Westbrook Institute"),
        taglines=("Learning for life", "Excellence in education", "Where curiosity grows"),
        nav=("Academics", "Admissions", "Student Life", "Campus", "News"),
        heroes=(
            ("Shape your future", "Over 40 degree programs taught by leading faculty."),
            ("Applications now open", "Apply by March 1 for the fall semester."),
            ("A campus like no other", "Study, live and grow in the heart of the city."),
        ),
        topics=(
            ("Academic Programs", "Science, arts, business and engineering degrees."),
            ("Admission Information", "Application deadlines, fees and required documents."),
            ("Student Life", "Over 100 clubs, sports teams and events."),
            ("Faculty", "Small classes taught by experts in their field."),
            ("Campus Map", "Find lecture halls, libraries and dining halls."),
        ),
        cards_titles=("Our Programs", "Schools", "Explore"),
        cards=(
            ("Engineering", "Build the future."),
            ("Business", "Lead with confidence."),
            ("Arts", "Create and perform."),
            ("Science", "Discover how things work."),
            ("Medicine", "Care for others."),
            ("Law", "Defend what is right."),
        ),
        cards_noun="academic programs",
        buttons=("Apply Now", "Visit Campus", "Request Info"),
        ctas=(
            ("Visit our campus", "Join a guided tour on any weekday."),
            ("Apply for fall", "Applications close on March 1."),
        ),
        footer_links=("Faculty Profiles", "Campus Maps", "Schedules", "Alumni"),
    ),
    Site(
        kind="Financial Services",
        names=("Trustway Bank", "Evergreen Finance", "Summit Advisors", "Harbor Savings"),
        taglines=("Your money, your future", "Banking made simple", "Plan today, thrive tomorrow"),
        nav=("Accounts", "Loans", "Investing", "Calculators", "Support"),
        heroes=(
            ("Banking made simple", "Open an account online in five minutes."),
            ("Plan for tomorrow", "Retirement and savings advice from certified planners."),
            ("Loans with lower rates", "Home, car and personal loans that fit your budget."),
        ),
        topics=(
            ("Financial Products", "Checking, savings, credit cards and loans."),
            ("Calculators", "Estimate your mortgage, savings and retirement."),
            ("Security", "Two-factor login and fraud alerts on every account."),
            ("Investing", "Low-fee funds and advice from our planners."),
            ("Customer Support", "Call us any time, day or night."),
        ),
        cards_titles=("Our Services", "Accounts", "Products"),
        cards=(
            ("Checking", "No monthly fees."),
            ("Savings", "Earn 4% interest."),
            ("Mortgages", "Fixed and variable rates."),
            ("Credit Cards", "Cash back on every purchase."),
            ("Retirement", "Plan your future."),
            ("Business", "Accounts for small firms."),
        ),
        cards_noun="financial products",
        buttons=("Open an Account", "Log In", "Talk to an Advisor"),
        ctas=(
            ("Open an account today", "Get a $100 bonus when you join this month."),
            ("Talk to an advisor", "Book a free review of your finances."),
        ),
        footer_links=("Customer Support", "Login", "Security Center", "Rates"),
    ),
    Site(
        kind="Photography Studio",
        names=("Lumen Studio", "Golden Hour Photography", "Frame & Light", "Still Moments"),
        taglines=("Moments worth keeping", "Portraits with personality", "Light, captured"),
        nav=("Portfolio", "Weddings", "Portraits", "Pricing", "Contact"),
        heroes=(
            ("Moments worth keeping", "Wedding, family and portrait photography."),
            ("Tell your story in pictures", "Natural light sessions in the studio or outdoors."),
            ("Portraits you will love", "Relaxed sessions and beautiful prints."),
        ),
        topics=(
            ("Portfolio", "A selection of our favorite weddings and portraits."),
            ("Weddings", "Full-day coverage with two photographers."),
            ("Pricing", "Sessions start at $250 with ten edited photos."),
            ("About Us", "A husband-and-wife team with 15 years behind the lens."),
            ("Prints", "Archival prints and albums made to last."),
        ),
        cards_titles=("Sessions", "Our Work", "Packages"),
        cards=(
            ("Weddings", "Your day, beautifully told."),
            ("Family", "Relaxed outdoor sessions."),
            ("Newborn", "Gentle studio sessions."),
            ("Headshots", "Look your professional best."),
            ("Events", "Parties and celebrations."),
            ("Products", "Clean shots for your shop."),
        ),
        cards_noun="session packages",
        buttons=("Book a Session", "View Portfolio", "Get a Quote"),
        ctas=(
            ("Book your session", "Dates for this season are filling up fast."),
            ("Planning a wedding?", "Ask about our full-day packages."),
        ),
        footer_links=("Instagram", "Pricing", "Client Login", "Contact"),
    ),
)

ADJECTIVES = (
    "clean",
    "modern",
    "minimalist",
    "warm",
    "bold",
    "elegant",
    "friendly",
    "professional",
    "simple",
    "vibrant",
)
COPYRIGHT = ("© 2024 {name}. All rights reserved.", "© 2024 {name}", "Copyright 2024 {name}")
